// The step-through viewer of report.html. It holds no data: it only shows
// one step's section at a time, the way the page already lays them out, and
// moves between them with the keyboard, the timeline and the buttons; it
// switches a step's tabs (actions, console, network), keeps to the failed
// or refused steps when asked, and opens a screenshot at full size with
// zoom. The page's Content-Security-Policy allows this script by its hash
// and nothing else. Without it (printing, scripts off) every step shows,
// one after another, with all of its tabs.
(function () {
  'use strict';
  var steps = Array.prototype.slice.call(document.querySelectorAll('section.step'));
  var body = document.body;

  // The report opens at its summary, whatever step its address names (a
  // reload after stepping keeps the step's hash): the browser's own jump
  // to the anchor is undone once the page has loaded.
  if ('scrollRestoration' in history) history.scrollRestoration = 'manual';
  window.addEventListener('load', function () { window.scrollTo({top: 0, behavior: 'instant'}); });

  setupLightbox();
  if (!steps.length) return;

  var pos = document.getElementById('viewer-pos');
  var allButton = document.querySelector('[data-go="all"]');
  var failedButton = document.querySelector('[data-go="failed"]');
  var cur = -1;

  function indexOf(id) {
    for (var i = 0; i < steps.length; i++) if (steps[i].id === id) return i;
    return -1;
  }

  function failedOnly() { return body.classList.contains('failed-only'); }

  // shown reports whether step i is one the viewer steps through: all of
  // them, or the failed and refused ones under the filter.
  function shown(i) { return !failedOnly() || steps[i].classList.contains('failed'); }

  // near returns the step the viewer moves to from i by dir (1, -1), or
  // i itself when there is none that way.
  function near(i, dir) {
    for (var j = i + dir; j >= 0 && j < steps.length; j += dir) if (shown(j)) return j;
    return i;
  }

  function edge(dir) {
    var i = dir > 0 ? -1 : steps.length;
    var j = near(i, dir);
    return j === i ? cur : j;
  }

  // reveal scrolls the list that holds link (the timeline, or the index of
  // steps) so that link is in view, and nothing else: scrollIntoView would
  // scroll the page too.
  function reveal(link) {
    var box = link.closest('ol');
    if (box && box.closest('nav')) box = box.closest('nav');
    if (!box) return;
    var b = box.getBoundingClientRect(), r = link.getBoundingClientRect();
    if (r.left < b.left) box.scrollLeft -= b.left - r.left;
    else if (r.right > b.right) box.scrollLeft += r.right - b.right;
    if (r.top < b.top) box.scrollTop -= b.top - r.top;
    else if (r.bottom > b.bottom) box.scrollTop += r.bottom - b.bottom;
  }

  function show(i, scroll) {
    i = Math.max(0, Math.min(steps.length - 1, i));
    cur = i;
    for (var j = 0; j < steps.length; j++) steps[j].classList.toggle('current', j === i);
    var id = steps[i].id;
    var links = document.querySelectorAll('[data-step]');
    for (var k = 0; k < links.length; k++) {
      var on = links[k].getAttribute('href') === '#' + id;
      if (on) {
        links[k].setAttribute('aria-current', 'step');
        reveal(links[k]);
      } else {
        links[k].removeAttribute('aria-current');
      }
    }
    if (pos) {
      var text = 'Step ' + (i + 1) + ' of ' + steps.length;
      if (failedOnly()) {
        var n = 0, at = 0;
        for (var m = 0; m < steps.length; m++) if (shown(m)) { n++; if (m === i) at = n; }
        text += at ? ' · failed ' + at + ' of ' + n : '';
      }
      pos.textContent = text;
    }
    if (history.replaceState && location.hash !== '#' + id) {
      try { history.replaceState(null, '', '#' + id); } catch (e) { /* file:// in some browsers */ }
    }
    if (scroll && !body.classList.contains('all')) {
      var top = document.getElementById('viewer');
      if (top && top.getBoundingClientRect().top < 0) top.scrollIntoView({block: 'start', behavior: 'instant'});
    }
  }

  function setAll(on) {
    body.classList.toggle('all', on);
    if (allButton) allButton.setAttribute('aria-pressed', on ? 'true' : 'false');
    if (on) steps[cur].scrollIntoView({block: 'start', behavior: 'instant'});
  }

  // setFailed keeps the viewer to the failed and refused steps, or lets it
  // show them all again; a step the filter hides gives way to the next
  // failed one.
  function setFailed(on) {
    if (on && (!failedButton || failedButton.disabled)) return;
    body.classList.toggle('failed-only', on);
    if (failedButton) failedButton.setAttribute('aria-pressed', on ? 'true' : 'false');
    if (on && !shown(cur)) {
      var j = near(cur, 1);
      if (j === cur) j = near(cur, -1);
      show(j, true);
    } else {
      show(cur, false);
    }
  }

  // selectTab shows the tab of a step's section that button names.
  function selectTab(button) {
    var section = button.closest('section.step');
    var name = button.getAttribute('data-tab');
    var tabs = section.querySelectorAll('[data-tab]');
    for (var i = 0; i < tabs.length; i++) tabs[i].setAttribute('aria-selected', tabs[i] === button ? 'true' : 'false');
    var panels = section.querySelectorAll('[data-panel]');
    for (var j = 0; j < panels.length; j++) panels[j].classList.toggle('on', panels[j].getAttribute('data-panel') === name);
  }

  body.classList.add('viewer');
  var start = indexOf(location.hash.slice(1));
  show(start < 0 ? 0 : start, false);

  document.addEventListener('click', function (ev) {
    var tab = ev.target.closest ? ev.target.closest('[data-tab]') : null;
    if (tab) {
      selectTab(tab);
      return;
    }
    var a = ev.target.closest ? ev.target.closest('[data-step], [data-go]') : null;
    if (!a) return;
    var go = a.getAttribute('data-go');
    if (go === 'prev') show(near(cur, -1), true);
    else if (go === 'next') show(near(cur, 1), true);
    else if (go === 'all') setAll(!body.classList.contains('all'));
    else if (go === 'failed') setFailed(!failedOnly());
    else {
      var i = indexOf((a.getAttribute('href') || '').slice(1));
      if (i < 0) return;
      ev.preventDefault();
      show(i, true);
      if (body.classList.contains('all')) steps[i].scrollIntoView({block: 'start', behavior: 'instant'});
    }
  });

  window.addEventListener('hashchange', function () {
    var i = indexOf(location.hash.slice(1));
    if (i >= 0 && i !== cur) show(i, true);
  });

  document.addEventListener('keydown', function (ev) {
    if (ev.altKey || ev.ctrlKey || ev.metaKey || ev.defaultPrevented || body.classList.contains('zooming')) return;
    var t = ev.target && ev.target.tagName;
    if (t === 'INPUT' || t === 'TEXTAREA' || t === 'SELECT') return;
    switch (ev.key) {
      case 'ArrowRight': case 'j': case 'n': show(near(cur, 1), true); break;
      case 'ArrowLeft': case 'k': case 'p': show(near(cur, -1), true); break;
      case 'Home': show(edge(1), true); break;
      case 'End': show(edge(-1), true); break;
      case 'a': setAll(!body.classList.contains('all')); break;
      case 'f': setFailed(!failedOnly()); break;
      default: return;
    }
    ev.preventDefault();
  });

  // setupLightbox makes every screenshot open at full size in the
  // lightbox, where it zooms (the buttons, + and -, 0 for its own size, f
  // to fit) and scrolls; Escape closes it.
  function setupLightbox() {
    var box = document.getElementById('lightbox');
    if (!box) return;
    var stage = box.querySelector('.stage');
    var label = box.querySelector('.lb-zoom');
    var title = box.querySelector('.lb-title');
    var shown = null, w = 0, h = 0, zoom = 1, opener = null;

    function setZoom(z) {
      zoom = Math.max(0.1, Math.min(8, z));
      shown.style.width = Math.round(w * zoom) + 'px';
      shown.style.height = Math.round(h * zoom) + 'px';
      label.textContent = Math.round(zoom * 100) + '%';
    }

    function fit() {
      var r = stage.getBoundingClientRect();
      return Math.min(1, (r.width - 24) / w, (r.height - 12) / h);
    }

    function open(svg) {
      w = Number(svg.getAttribute('data-w')) || 0;
      h = Number(svg.getAttribute('data-h')) || 0;
      if (!w || !h) return;
      opener = svg;
      shown = svg.cloneNode(true);
      shown.removeAttribute('tabindex');
      shown.setAttribute('role', 'img');
      shown.setAttribute('aria-label', (svg.getAttribute('aria-label') || 'screenshot').replace(/: open it at full size$/, ''));
      while (stage.firstChild) stage.removeChild(stage.firstChild);
      stage.appendChild(shown);
      title.textContent = shown.getAttribute('aria-label');
      box.hidden = false;
      body.classList.add('zooming');
      setZoom(1);
      box.querySelector('[data-zoom="close"]').focus();
    }

    function close() {
      box.hidden = true;
      body.classList.remove('zooming');
      while (stage.firstChild) stage.removeChild(stage.firstChild);
      shown = null;
      if (opener) opener.focus();
    }

    function act(what) {
      switch (what) {
        case 'in': setZoom(zoom * 1.25); break;
        case 'out': setZoom(zoom / 1.25); break;
        case '1': setZoom(1); break;
        case 'fit': setZoom(fit()); break;
        case 'close': close(); break;
      }
    }

    document.addEventListener('click', function (ev) {
      var b = ev.target.closest ? ev.target.closest('[data-zoom]') : null;
      if (b && shown) {
        act(b.getAttribute('data-zoom'));
        return;
      }
      var svg = ev.target.closest ? ev.target.closest('svg.shot') : null;
      if (svg && !shown && !box.contains(svg)) open(svg);
    });

    document.addEventListener('keydown', function (ev) {
      if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
      if (!shown) {
        var t = ev.target;
        if ((ev.key === 'Enter' || ev.key === ' ') && t && t.matches && t.matches('svg.shot')) {
          ev.preventDefault();
          open(t);
        }
        return;
      }
      var keys = {'Escape': 'close', '+': 'in', '=': 'in', '-': 'out', '0': '1', 'f': 'fit'};
      if (keys[ev.key]) {
        ev.preventDefault();
        act(keys[ev.key]);
      }
    });
  }
})();
