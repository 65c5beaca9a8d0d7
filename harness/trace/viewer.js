// The step-through viewer of report.html. It holds no data: it only shows
// one step's section at a time, the way the page already lays them out, and
// moves between them with the keyboard, the timeline and the buttons. The
// page's Content-Security-Policy allows this script by its hash and nothing
// else. Without it (printing, scripts off) every step shows, one after
// another.
(function () {
  'use strict';
  var steps = Array.prototype.slice.call(document.querySelectorAll('section.step'));
  if (!steps.length) return;
  var body = document.body;
  var pos = document.getElementById('viewer-pos');
  var allButton = document.querySelector('[data-go="all"]');
  var cur = -1;

  function indexOf(id) {
    for (var i = 0; i < steps.length; i++) if (steps[i].id === id) return i;
    return -1;
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
    if (pos) pos.textContent = 'Step ' + (i + 1) + ' of ' + steps.length;
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

  body.classList.add('viewer');
  var start = indexOf(location.hash.slice(1));
  show(start < 0 ? 0 : start, false);

  document.addEventListener('click', function (ev) {
    var a = ev.target.closest ? ev.target.closest('[data-step], [data-go]') : null;
    if (!a) return;
    var go = a.getAttribute('data-go');
    if (go === 'prev') show(cur - 1, true);
    else if (go === 'next') show(cur + 1, true);
    else if (go === 'all') setAll(!body.classList.contains('all'));
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
    if (ev.altKey || ev.ctrlKey || ev.metaKey || ev.defaultPrevented) return;
    var t = ev.target && ev.target.tagName;
    if (t === 'INPUT' || t === 'TEXTAREA' || t === 'SELECT') return;
    switch (ev.key) {
      case 'ArrowRight': case 'j': case 'n': show(cur + 1, true); break;
      case 'ArrowLeft': case 'k': case 'p': show(cur - 1, true); break;
      case 'Home': show(0, true); break;
      case 'End': show(steps.length - 1, true); break;
      case 'a': setAll(!body.classList.contains('all')); break;
      default: return;
    }
    ev.preventDefault();
  });
})();
