// Spotter's approval panel. Plain JavaScript, no dependencies.
//
// Everything shown here that a page or a model produced (element names,
// model text, URLs, tool output) is untrusted: it is only ever put into the
// document as text (textContent, input values) or, for URLs, checked to be
// same-origin (or a data: image) before it becomes an img src or link href.
// No data is ever parsed as HTML.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);

  // ---- small helpers ----------------------------------------------------

  // el builds an element; string children become text nodes.
  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k === 'dataset') Object.assign(e.dataset, v);
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children) {
      if (c === undefined || c === null || c === false) continue;
      e.append(typeof c === 'string' ? document.createTextNode(c) : c);
    }
    return e;
  }

  function clear(e) { while (e.firstChild) e.firstChild.remove(); }

  function str(v) {
    if (v === undefined || v === null) return '';
    return typeof v === 'string' ? v : String(v);
  }

  function clip(s, n) {
    s = str(s);
    return s.length > n ? s.slice(0, n - 1) + '…' : s;
  }

  // safeURL returns u if it is a same-origin http(s) URL or a data: image,
  // resolved against the page, and '' otherwise.
  function safeURL(u) {
    u = str(u);
    if (!u) return '';
    if (/^data:image\/(png|jpeg|webp|gif);base64,[A-Za-z0-9+/=\s]*$/.test(u)) return u;
    try {
      const url = new URL(u, location.href);
      if ((url.protocol === 'http:' || url.protocol === 'https:') && url.origin === location.origin) return url.href;
    } catch (_) { /* not a URL */ }
    return '';
  }

  function seg(s) { return encodeURIComponent(str(s)); }

  function csrfToken() {
    for (const part of document.cookie.split(';')) {
      const [k, ...v] = part.trim().split('=');
      if (k === 'spotter_csrf') return decodeURIComponent(v.join('='));
    }
    return '';
  }

  function announce(msg) {
    const a = $('announce');
    a.textContent = '';
    // A fresh text node makes screen readers read it again.
    setTimeout(() => { a.textContent = msg; }, 50);
  }

  function fmtTime(t) {
    const d = new Date(t);
    if (isNaN(d)) return '';
    return d.toLocaleTimeString();
  }

  function fmtDateTime(t) {
    const d = new Date(t);
    if (isNaN(d) || d.getFullYear() < 2000) return '';
    return d.toLocaleString();
  }

  class AuthError extends Error {}
  class APIError extends Error {
    constructor(status, msg) { super(msg); this.status = status; }
  }

  // api calls the server. State-changing requests carry the CSRF token.
  async function api(method, path, body) {
    const headers = { Accept: 'application/json' };
    const opts = { method, headers, credentials: 'same-origin', cache: 'no-store' };
    if (method !== 'GET' && method !== 'HEAD') headers['X-CSRF-Token'] = csrfToken();
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(body);
    }
    const r = await fetch(path, opts);
    if (r.status === 401) {
      showLogin();
      throw new AuthError('not logged in');
    }
    if (!r.ok) {
      let msg = '';
      try { msg = str((await r.json()).error); } catch (_) { /* not JSON */ }
      throw new APIError(r.status, msg || r.statusText || ('HTTP ' + r.status));
    }
    const ct = r.headers.get('Content-Type') || '';
    if (r.status === 204 || !ct.includes('json')) return null;
    return r.json();
  }

  function errText(err) {
    if (err instanceof APIError) return err.message + ' (' + err.status + ')';
    return str(err && err.message) || 'request failed';
  }

  // listOf accepts either a bare array or an object holding one.
  function listOf(v, key) {
    if (Array.isArray(v)) return v;
    if (v && Array.isArray(v[key])) return v[key];
    return [];
  }

  // ---- state ------------------------------------------------------------

  const state = {
    started: false,
    sessions: [],
    current: null,      // id of the session on screen
    es: null,           // its EventSource
    lastSeq: 0,
    retry: null,        // reconnect timer
    textItem: null,     // the timeline item collecting text_delta
    approvals: new Map(), // approvalId -> {data, card}
    decided: new Set(),   // approvalIds known to be decided, never shown again
    takeover: false,
    liveSize: null,     // {w, h} natural size of the live image
    live: null,         // the live view's EventSource
    liveTime: 0,        // when the picture on show was drawn (ms since the epoch)
    liveFrames: 0,      // live frames shown since the session opened
    imageSize: null,    // {w, h} of the session's screenshots, from the live view
    follow: true,       // the history follows its newest entries
    followTop: 0,       // the history's scrollTop when it last scrolled
    lastWords: '',      // the model's words in the current turn
    pollTimer: null,
  };

  // ---- login ------------------------------------------------------------

  function showLogin() {
    stopApp();
    $('app').hidden = true;
    $('logout').hidden = true;
    $('login').hidden = false;
    $('conn').textContent = '';
    $('login-token').focus();
  }

  async function login(ev) {
    ev.preventDefault();
    const err = $('login-error');
    err.textContent = '';
    const token = $('login-token').value.trim();
    if (!token) { err.textContent = 'Enter the token.'; return; }
    let r;
    try {
      r = await fetch('/login', {
        method: 'POST',
        credentials: 'same-origin',
        redirect: 'manual',
        headers: { Accept: 'application/json' },
        body: new URLSearchParams({ token }),
      });
    } catch (e) {
      err.textContent = 'Cannot reach the server.';
      return;
    }
    if (!(r.ok || r.type === 'opaqueredirect')) {
      err.textContent = r.status === 401 || r.status === 403 ? 'That token is not valid.' : 'Login failed (' + r.status + ').';
      return;
    }
    $('login-token').value = '';
    if (location.pathname === '/login') history.replaceState(null, '', '/' + location.hash);
    startApp();
  }

  // ---- the app shell ----------------------------------------------------

  async function boot() {
    $('login-form').addEventListener('submit', login);
    $('new-task-form').addEventListener('submit', startTask);
    for (const r of document.querySelectorAll('#new-task-form input[name=kind]')) r.addEventListener('change', () => taskKind(true));
    taskKind(true);
    for (const id of ['nt-task', 'nt-url', 'nt-script']) $(id).addEventListener('input', () => { delete $(id).dataset.auto; });
    $('takeover').addEventListener('click', () => setTakeover(true));
    $('handback').addEventListener('click', () => setTakeover(false));
    $('stop-session').addEventListener('click', stopSession);
    $('msg-form').addEventListener('submit', sendMessage);
    $('logout').addEventListener('click', async () => {
      try { await api('POST', '/logout', {}); } catch (_) { /* shown below either way */ }
      showLogin();
    });
    $('live-img').addEventListener('click', liveClick);
    $('live-img').addEventListener('load', () => {
      const img = $('live-img');
      state.liveSize = { w: img.naturalWidth, h: img.naturalHeight };
      $('live-empty').hidden = true;
      img.hidden = false;
    });
    $('live-img').addEventListener('error', () => {
      $('live-img').hidden = true;
      $('live-empty').hidden = false;
    });
    $('click-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      sendInput({ kind: 'click', at: { x: Number($('tk-x').value), y: Number($('tk-y').value) }, has_at: true });
    });
    $('type-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const text = $('tk-text').value;
      if (!text) return;
      sendInput({ kind: 'type', text }).then((ok) => { if (ok) $('tk-text').value = ''; });
    });
    $('tk-enter').addEventListener('click', () => sendInput({ kind: 'keypress', keys: ['Enter'] }));
    window.addEventListener('hashchange', route);
    setInterval(tickTimers, 1000);

    // Only the operator's own scrolling (wheel, touch, keys, the
    // scrollbar) stops the history following its newest entry: a scroll
    // the page's layout caused (rows added or grown, the box resized and
    // its scroll position clamped) does not.
    for (const kind of ['wheel', 'touchstart', 'keydown', 'pointerdown']) {
      $('timeline').addEventListener(kind, () => { state.operatorAt = Date.now(); }, { passive: true });
    }
    $('timeline').addEventListener('scroll', () => {
      const ol = $('timeline');
      const atEnd = ol.scrollHeight - ol.scrollTop - ol.clientHeight < 40;
      const byOperator = Date.now() - (state.operatorAt || 0) < 1000;
      if (atEnd) state.follow = true;
      else if (byOperator && ol.scrollTop < state.followTop - 1) state.follow = false;
      state.followTop = ol.scrollTop;
      if (state.follow && !atEnd && !byOperator) follow();
    });
    // Whether the browser is logged in, asked without a request that
    // fails: the login form shows without a 401 in the console.
    if (!(await loggedIn())) {
      showLogin();
      return;
    }
    startApp();
  }

  // loggedIn asks the server whether this browser is logged in; a server
  // that cannot be reached counts as logged in (the panel then says so).
  async function loggedIn() {
    try {
      const a = await api('GET', '/auth');
      return !!(a && a.authenticated);
    } catch (e) {
      $('conn').textContent = 'Server error: ' + errText(e);
      return true;
    }
  }

  function startApp() {
    $('login').hidden = true;
    $('app').hidden = false;
    $('logout').hidden = false;
    if (!state.started) {
      state.started = true;
      state.pollTimer = setInterval(refreshLists, 5000);
    }
    refreshLists();
    route();
  }

  function stopApp() {
    state.started = false;
    clearInterval(state.pollTimer);
    closeStream();
    state.current = null;
  }

  function route() {
    if ($('app').hidden) return;
    const h = location.hash;
    const m = /^#\/session\/(.+)$/.exec(h);
    $('home').hidden = true;
    $('new-task').hidden = true;
    if (m) {
      $('session-view').hidden = false;
      openSession(decodeURIComponent(m[1]));
      return;
    }
    closeStream();
    state.current = null;
    $('session-view').hidden = true;
    markCurrent();
    if (h === '#/new') {
      $('new-task').hidden = false;
      $('new-task-title').focus();
    } else {
      $('home').hidden = false;
    }
  }

  async function refreshLists() {
    if (!state.started) return;
    try {
      const [ss, ps] = await Promise.all([
        api('GET', '/sessions'),
        api('GET', '/approvals?status=pending'),
      ]);
      state.sessions = listOf(ss, 'sessions');
      renderSessions();
      renderPendingAll(listOf(ps, 'approvals'));
      $('conn').textContent = '';
    } catch (e) {
      if (!(e instanceof AuthError)) $('conn').textContent = 'Cannot load sessions: ' + errText(e);
    }
  }

  // statusWord says how a session stands: a session whose last turn ended
  // with the model's answer is idle on the server (it may be sent more),
  // and completed for the operator.
  function statusWord(s) {
    const st = str(s.status);
    if (st === 'idle' && Number(s.step) > 0 && (str(s.kind) || 'agent') === 'agent') return 'completed';
    return st;
  }

  function sessionLabel(s) {
    return str(s.title) || clip(str(s.task), 60) || str(s.id);
  }

  function renderSessions() {
    const ul = $('session-list');
    clear(ul);
    for (const s of state.sessions) {
      const id = str(s.id);
      if (!id) continue;
      const a = el('a', { href: '#/session/' + seg(id), dataset: { session: id, status: statusWord(s) } },
        sessionLabel(s),
        el('span', { class: 's-meta', text: [statusWord(s), fmtDateTime(s.updated || s.created)].filter(Boolean).join(' · ') }));
      ul.append(el('li', {}, a));
    }
    $('sessions-empty').hidden = state.sessions.length > 0;
    markCurrent();
  }

  function markCurrent() {
    for (const a of $('session-list').querySelectorAll('a')) {
      if (a.dataset.session === state.current) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
  }

  function renderPendingAll(list) {
    const ul = $('pending-all');
    clear(ul);
    for (const raw of list) {
      const a = normApproval(raw);
      const s = state.sessions.find((x) => x.id === a.session);
      ul.append(el('li', {}, el('a', { href: '#/session/' + seg(a.session) },
        clip(requestTitle(a) || a.rule || 'approval', 80),
        el('span', { class: 's-meta', text: (s ? sessionLabel(s) : a.session) + (a.rule ? ' · ' + a.rule : '') }))));
      // A pending approval of the open session that the stream has not
      // shown (or that a restart left behind) appears too.
      if (a.session === state.current) addApproval(a);
    }
    $('pending-empty').hidden = list.length > 0;
  }

  // ---- one session --------------------------------------------------------

  function closeStream() {
    if (state.es) { state.es.close(); state.es = null; }
    if (state.live) { state.live.close(); state.live = null; }
    clearTimeout(state.retry);
    state.retry = null;
  }

  async function openSession(id) {
    if (state.current === id && state.es) return;
    closeStream();
    state.current = id;
    state.lastSeq = 0;
    state.textItem = null;
    state.takeover = false;
    state.follow = true;
    state.lastWords = '';
    state.liveTime = 0;
    state.liveFrames = 0;
    state.imageSize = null;
    delete $('session-status').dataset.stop;
    $('live-img').removeAttribute('src');
    $('live-img').hidden = true;
    $('live-empty').hidden = false;
    showOutcome(null);
    for (const { card } of state.approvals.values()) card.remove();
    state.approvals.clear();
    clear($('timeline'));
    $('approvals').hidden = true;
    $('session-title').textContent = id;
    $('session-status').textContent = '';
    setKind('');
    renderTakeover();
    markCurrent();
    $('session-title').focus();

    connect();
    connectLive();
    try {
      const h = await api('GET', '/session/' + seg(id));
      if (state.current !== id || !h) return;
      const s = h.session || {};
      $('session-title').textContent = sessionLabel({ ...s, id });
      if (!$('session-status').dataset.stop) setStatus(statusWord(s));
      setKind(str(s.kind) || 'agent');
      const pending = await api('GET', '/approvals?status=pending&session=' + seg(id));
      if (state.current !== id) return;
      for (const a of listOf(pending, 'approvals')) addApproval(normApproval(a));
    } catch (e) {
      if (!(e instanceof AuthError)) $('session-status').textContent = 'Cannot load: ' + errText(e);
    }
  }

  function setStatus(s) {
    $('session-status').textContent = str(s) || 'unknown';
    $('session-status').dataset.status = str(s);
  }

  // setKind shows the message box only where there is a model to message:
  // the server runs the model of agent sessions only. An executor or MCP
  // session's model runs in its client, and a message would be refused.
  function setKind(kind) {
    const agent = kind === 'agent';
    $('msg-form').hidden = !agent;
    const why = {
      executor: 'Its client runs the model and posts the calls (the executor API): there is no model here to message.',
      mcp: 'An MCP client drives this session: there is no model here to message.',
    }[kind];
    $('msg-none').textContent = why || '';
    $('msg-none').hidden = agent || !why;
  }

  const eventTypes = ['session', 'text_delta', 'tool_call', 'permission_request', 'tool_result',
    'approval_decided', 'takeover', 'operator_input', 'turn_stop', 'error_event', 'status'];

  function connect() {
    const id = state.current;
    const es = new EventSource('/session/' + seg(id) + '/events?after=' + state.lastSeq);
    state.es = es;
    const handler = (ev) => {
      if (state.es !== es) return;
      const seq = Number(ev.lastEventId);
      if (seq && seq <= state.lastSeq) return; // already shown
      if (seq) state.lastSeq = seq;
      let data = {};
      try { data = JSON.parse(ev.data); } catch (_) { data = { text: str(ev.data) }; }
      onEvent(ev.type === 'message' ? str(data.type) || 'message' : ev.type, data || {});
    };
    for (const t of eventTypes) es.addEventListener(t, handler);
    es.onmessage = handler;
    es.onopen = () => { $('conn').textContent = ''; };
    es.onerror = () => {
      if (state.es !== es) return;
      if (es.readyState === EventSource.CLOSED) {
        // The server refused or ended the stream: check the login, then
        // reconnect after what was already shown.
        es.close();
        state.es = null;
        $('conn').textContent = 'Disconnected; reconnecting…';
        state.retry = setTimeout(async () => {
          if (!(await loggedIn())) { showLogin(); return; }
          if (state.current === id && !state.es) connect();
        }, 2000);
      } else {
        $('conn').textContent = 'Reconnecting…';
      }
    };
  }

  function onEvent(type, d) {
    if (type !== 'text_delta') state.textItem = null;
    state.eventTime = str(d.time);
    if (type === 'text_delta' || type === 'tool_call') {
      // A new turn: the outcome of the last one no longer stands.
      showOutcome(null);
      delete $('session-status').dataset.stop;
    }
    switch (type) {
      case 'session':
        item(type, 'Session', 'started');
        break;
      case 'text_delta': {
        if (!state.textItem) state.textItem = item('text', 'Model', '');
        const body = state.textItem.querySelector('.ev-body');
        body.textContent += str(d.text);
        state.lastWords = body.textContent;
        follow();
        break;
      }
      case 'tool_call': {
        const acts = Array.isArray(d.actions) ? d.actions.map(actionSummary).filter(Boolean) : [];
        const what = acts.length ? acts.join('; ') : clip(JSON.stringify(d.input === undefined ? {} : d.input), 300);
        const li = item(type, 'Tool call', str(d.name) + ': ' + what + (d.error ? ' (could not be read: ' + str(d.error) + ')' : ''),
          { call: str(d.toolCallId) });
        if (d.error) li.classList.add('is-error');
        setStatus('running');
        break;
      }
      case 'permission_request': {
        const a = normApproval(d);
        a.session = state.current;
        item(type, 'Needs approval', [a.rule, a.reason].filter(Boolean).join(': ') || 'an action was flagged',
          { call: a.toolCallId, approval: a.approvalId });
        if (a.shot) showLive(shotURL(a.shot), d.time);
        addApproval(a);
        announce(a.action || !a.safety.length ? 'An action is waiting for your decision.' : 'A provider safety check is waiting for your decision.');
        break;
      }
      case 'tool_result': {
        const parts = Array.isArray(d.content) ? d.content : [];
        const texts = [];
        let img = '';
        for (const p of parts) {
          if (!p) continue;
          if (p.type === 'text') texts.push(str(p.text));
          if (p.type === 'image') img = str(p.url) || (p.data ? 'data:' + str(p.mimeType) + ';base64,' + str(p.data) : '');
        }
        const li = item(type, d.isError ? 'Error' : 'Result', clip(texts.join('\n'), 2000) || (img ? 'screenshot' : '(empty)'),
          { call: str(d.toolCallId) });
        if (d.isError) li.classList.add('is-error');
        const u = safeURL(img);
        if (u) {
          li.querySelector('.ev-body').append(' ', el('a', { href: u, target: '_blank', rel: 'noopener noreferrer', text: 'screenshot' }));
          follow();
          showLive(u, d.time);
        }
        break;
      }
      case 'approval_decided': {
        const words = { approved: 'Approved', denied: 'Denied', edited: 'Approved with changes', expired: 'Expired (denied)' };
        const st = str(d.status);
        let text = (words[st] || st || 'Decided') + (d.by ? ' by ' + str(d.by) : '');
        if (d.reason) text += ': ' + str(d.reason);
        item(type, 'Decision', text, { approval: str(d.approvalId), status: st });
        removeApproval(str(d.approvalId));
        break;
      }
      case 'takeover': {
        const active = !!d.active;
        item(type, 'Take over', (d.by ? str(d.by) : 'An operator') + (active ? ' took control' : ' handed control back'));
        state.takeover = active;
        renderTakeover();
        break;
      }
      case 'operator_input': {
        // What an operator did during a takeover (or tried: the policy
        // may refuse it), as the server recorded it: typed text is
        // already masked when secret.
        const what = actionSummary(d.action) || 'input';
        const li = item(type, 'Operator', d.error ? what + ' (refused: ' + str(d.error) + ')' : what);
        if (d.error) li.classList.add('is-error');
        break;
      }
      case 'turn_stop': {
        const r = str(d.stopReason);
        const li = item(type, 'Turn ended', r + (d.error ? ': ' + str(d.error) : ''), { stop: r });
        if (r === 'error') li.classList.add('is-error');
        const o = outcomeOf(r, str(d.error));
        setStatus(o ? o.status : r === 'tool_use' ? 'waiting' : r);
        if (o) {
          $('session-status').dataset.stop = r;
          showOutcome({ ...o, words: state.lastWords, report: str(d.report) });
          announce('The session ' + o.status + '.');
        }
        state.lastWords = '';
        refreshLists();
        break;
      }
      default:
        item(type, type, clip(JSON.stringify(d), 500));
    }
  }

  // item appends one entry to the timeline and returns it. Its time is
  // when the server stored the event (events carry it), so a history read
  // back later says when each thing happened.
  function item(type, label, text, data) {
    const ol = $('timeline');
    const at = new Date(state.eventTime || Date.now());
    const li = el('li', { class: 'ev ev-' + type, dataset: { type, ...(data || {}) } },
      el('span', { class: 'ev-kind', text: label }),
      el('span', { class: 'ev-body', text: str(text) }),
      el('time', { class: 'ev-time', datetime: isNaN(at) ? '' : at.toISOString(), text: fmtTime(at) }));
    ol.append(li);
    follow();
    return li;
  }

  // follow keeps the history at its newest entry, unless the operator
  // scrolled up to read older ones.
  function follow() {
    if (!state.follow) return;
    const ol = $('timeline');
    ol.scrollTop = ol.scrollHeight;
    state.followTop = ol.scrollTop;
  }

  // outcomeOf says how a turn that ended with stop reason r came out, or
  // null if the session waits for its client.
  function outcomeOf(r, err) {
    switch (r) {
      case 'end_turn': return { status: 'completed', title: 'Completed', ok: true };
      case 'max_steps': return { status: 'failed', title: 'Failed: the step limit was reached', detail: err };
      case 'error':
        if (err === 'session stopped') return { status: 'stopped', title: 'Stopped' };
        return { status: 'failed', title: 'Failed', detail: err };
    }
    return null;
  }

  // showOutcome shows how the session's last turn came out (o: status,
  // title, detail, the model's last words, the report's path), or hides it.
  function showOutcome(o) {
    const box = $('outcome');
    box.hidden = !o;
    if (!o) return;
    box.dataset.status = o.status;
    $('outcome-title').textContent = o.title;
    $('outcome-detail').textContent = str(o.detail);
    $('outcome-detail').hidden = !o.detail;
    $('outcome-words').textContent = str(o.words);
    $('outcome-words-row').hidden = !o.words;
    const link = $('outcome-report');
    const u = safeURL(o.report);
    link.hidden = !u;
    if (u) link.href = u;
  }

  // ---- the live view and taking over ------------------------------------

  // showLive shows the picture at u, drawn at time at (ms, or an ISO
  // time), unless the live view shows a newer one already.
  function showLive(u, at) {
    u = safeURL(u);
    if (!u) return;
    const t = typeof at === 'number' ? at : Date.parse(str(at));
    if (state.liveTime && (!t || t < state.liveTime)) return;
    if (t) state.liveTime = t;
    $('live-img').src = u;
  }

  // connectLive follows the session's live view: its latest screenshot,
  // then the page as it changes (GET /session/:id/live). The browser's
  // EventSource reconnects on its own.
  function connectLive() {
    const id = state.current;
    const es = new EventSource('/session/' + seg(id) + '/live');
    state.live = es;
    es.addEventListener('frame', (ev) => {
      if (state.live !== es) return;
      let f;
      try { f = JSON.parse(ev.data); } catch (_) { return; }
      const mime = str(f.mimeType);
      if (!/^image\/(png|jpeg)$/.test(mime) || typeof f.data !== 'string') return;
      const t = Date.parse(str(f.time)) || Date.now();
      if (state.liveTime && t < state.liveTime) return;
      state.liveTime = t;
      state.liveFrames++;
      if (f.image && f.image.w > 0 && f.image.h > 0) state.imageSize = { w: Number(f.image.w), h: Number(f.image.h) };
      const img = $('live-img');
      img.dataset.frames = String(state.liveFrames);
      img.dataset.drawn = String(t);
      if (state.imageSize) { img.dataset.imageW = String(state.imageSize.w); img.dataset.imageH = String(state.imageSize.h); }
      img.src = 'data:' + mime + ';base64,' + f.data;
    });
  }

  function renderTakeover() {
    const on = state.takeover;
    $('takeover').hidden = on;
    $('handback').hidden = !on;
    $('takeover-tools').hidden = !on;
    $('takeover-status').textContent = on ? 'You have control. The model waits until you hand back.' : '';
    document.querySelector('.live').classList.toggle('taking-over', on);
  }

  async function setTakeover(active) {
    const id = state.current;
    $('takeover-error').textContent = '';
    try {
      await api('POST', '/session/' + seg(id) + '/takeover', { active });
      if (state.current !== id) return;
      state.takeover = active;
      renderTakeover();
      (active ? $('handback') : $('takeover')).focus();
    } catch (e) {
      if (e instanceof AuthError) return;
      $('takeover-status').textContent = 'Could not ' + (active ? 'take over' : 'hand back') + ': ' + errText(e);
    }
  }

  // imagePoint turns a pointer event on img into pixels of an image of
  // size (default: img's own) shown in img's place.
  function imagePoint(img, ev, size) {
    const r = img.getBoundingClientRect();
    if (!r.width || !r.height || !img.naturalWidth) return null;
    const w = size ? size.w : img.naturalWidth, h = size ? size.h : img.naturalHeight;
    const x = Math.floor((ev.clientX - r.left) * w / r.width);
    const y = Math.floor((ev.clientY - r.top) * h / r.height);
    return { x: Math.min(Math.max(x, 0), w - 1), y: Math.min(Math.max(y, 0), h - 1) };
  }

  function liveClick(ev) {
    if (!state.takeover) return;
    // A live frame may be smaller than the session's screenshots, whose
    // pixels the input names: the point at the same fraction of them.
    const p = imagePoint($('live-img'), ev, state.imageSize);
    if (!p) return;
    $('tk-x').value = p.x;
    $('tk-y').value = p.y;
    sendInput({ kind: 'click', at: p, has_at: true });
  }

  async function sendInput(action) {
    const id = state.current;
    $('takeover-error').textContent = '';
    try {
      const r = await api('POST', '/session/' + seg(id) + '/input', action);
      // The answer carries a fresh screenshot of the display.
      const sh = r && r.screenshot;
      const at = Date.parse(str(r && r.frame && r.frame.time)) || Date.now();
      if (sh && sh.data && state.current === id) showLive('data:' + str(sh.mimeType || 'image/png') + ';base64,' + str(sh.data), at);
      return true;
    } catch (e) {
      if (!(e instanceof AuthError)) $('takeover-error').textContent = 'Input failed: ' + errText(e);
      return false;
    }
  }

  async function stopSession() {
    const id = state.current;
    if (!id || !confirm('Stop this session?')) return;
    try {
      await api('POST', '/session/' + seg(id) + '/stop', {});
      setStatus('stopped');
      refreshLists();
    } catch (e) {
      if (!(e instanceof AuthError)) $('session-status').textContent = 'Cannot stop: ' + errText(e);
    }
  }

  // ---- approvals ----------------------------------------------------------

  // normApproval accepts a permission_request event's data or a stored
  // approval from GET /approvals and returns one shape.
  function normApproval(v) {
    v = v || {};
    let req = v.request || {};
    if (typeof req === 'string') { try { req = JSON.parse(req); } catch (_) { req = {}; } }
    const pick = (k) => (v[k] !== undefined && v[k] !== null ? v[k] : req[k]);
    return {
      approvalId: str(v.approvalId || v.id || req.approvalId),
      session: str(v.session || v.sessionId || req.session || req.sessionId),
      toolCallId: str(pick('toolCallId')),
      rule: str(pick('rule')),
      reason: str(pick('reason')),
      action: pick('action') || null,
      target: pick('target') || null,
      marker: pick('marker') || null,
      element: rect(pick('element')),
      shot: pick('shot') || '',
      modelText: str(pick('modelText')),
      noDom: pick('noDom') === true,
      note: str(pick('note')),
      deadline: pick('deadline') || '',
      safety: Array.isArray(pick('safetyChecks')) ? pick('safetyChecks') : [],
    };
  }

  // shotURL turns a request's shot (a URL, a file name or an object with
  // one) into a URL the page may load, or ''.
  function shotURL(shot, session) {
    session = session || state.current;
    if (shot && typeof shot === 'object') shot = shot.url || shot.name || shot.path || '';
    shot = str(shot);
    if (!shot) return '';
    if (/^(data:|\/|https?:)/.test(shot)) return safeURL(shot);
    return safeURL('/session/' + seg(session) + '/shots/' + shot.split('/').map(seg).join('/'));
  }

  function pt(p) {
    if (!p || typeof p !== 'object') return null;
    const x = Number(p.x), y = Number(p.y);
    return Number.isFinite(x) && Number.isFinite(y) ? { x, y } : null;
  }

  // rect reads a box ({min: {x, y}, max: {x, y}}), or null.
  function rect(r) {
    if (!r || typeof r !== 'object') return null;
    const min = pt(r.min), max = pt(r.max);
    return min && max && max.x > min.x && max.y > min.y ? { min, max } : null;
  }

  function actionSummary(a) {
    if (!a || typeof a !== 'object') return '';
    const kind = str(a.kind) || 'action';
    const parts = [kind.replace(/_/g, ' ')];
    const at = pt(a.at);
    if (at && (a.has_at || at.x || at.y)) parts.push('at (' + Math.round(at.x) + ', ' + Math.round(at.y) + ')');
    if (a.text) parts.push('"' + clip(a.text, 80) + '"');
    if (Array.isArray(a.keys) && a.keys.length) parts.push(a.keys.join('+'));
    if (a.url) parts.push(clip(a.url, 120));
    if (Array.isArray(a.path) && a.path.length) parts.push(a.path.map(pt).filter(Boolean).map((p) => '(' + Math.round(p.x) + ', ' + Math.round(p.y) + ')').join(' → '));
    if (Array.isArray(a.files) && a.files.length) parts.push(a.files.join(', '));
    return parts.join(' ');
  }

  // requestTitle names what a request asks about: its action or, for a
  // request with none, the provider's safety checks.
  function requestTitle(a) {
    const act = actionSummary(a.action);
    if (act) return act;
    const codes = a.safety.filter((c) => c && typeof c === 'object').map((c) => str(c.code) || str(c.id)).filter(Boolean);
    return codes.length ? 'Provider safety check: ' + codes.join(', ') : '';
  }

  let cardSeq = 0;

  function addApproval(a) {
    if (!a.approvalId || state.approvals.has(a.approvalId) || state.decided.has(a.approvalId)) return;
    if (a.session && state.current && a.session !== state.current) return;
    const card = buildCard(a);
    state.approvals.set(a.approvalId, { data: a, card });
    $('approval-list').append(card);
    $('approvals').hidden = false;
    tickTimers();
  }

  function removeApproval(id) {
    state.decided.add(id);
    const entry = state.approvals.get(id);
    if (!entry) return;
    const hadFocus = entry.card.contains(document.activeElement);
    entry.card.remove();
    state.approvals.delete(id);
    $('approvals').hidden = state.approvals.size === 0;
    if (hadFocus) $('session-title').focus();
  }

  function buildCard(a) {
    const n = ++cardSeq;
    const card = $('approval-tpl').content.firstElementChild.cloneNode(true);
    const q = (s) => card.querySelector(s);
    card.dataset.approval = a.approvalId;
    card.dataset.call = a.toolCallId;
    const titleId = 'a-title-' + n;
    q('.a-title').id = titleId;
    card.setAttribute('aria-labelledby', titleId);
    q('.a-title').textContent = clip(requestTitle(a) || 'Flagged action', 200);
    q('.a-timer').dataset.deadline = str(a.deadline);

    // The screenshot with the marker, positioned in the image's own pixels
    // as fractions of its size, so it follows the image when it scales.
    const img = q('.a-shot');
    const marker = q('.a-marker');
    const editMarker = q('.edit-marker');
    const m = pt(a.marker) || pt(a.action && a.action.at);
    const box = a.element;
    const boxText = box ? 'the element the action named, framed at (' + Math.round(box.min.x) + ', ' + Math.round(box.min.y) +
      ')-(' + Math.round(box.max.x) + ', ' + Math.round(box.max.y) + ')' : '';
    img.alt = 'Screenshot shown with the request' + (m ? '; a marker shows the target at (' + Math.round(m.x) + ', ' + Math.round(m.y) + ')' : '') +
      (box ? '; ' + boxText : '');
    const place = (mk, p) => {
      if (!p || !img.naturalWidth || !img.naturalHeight) { mk.hidden = true; return; }
      mk.style.left = (100 * p.x / img.naturalWidth) + '%';
      mk.style.top = (100 * p.y / img.naturalHeight) + '%';
      mk.hidden = false;
    };
    // The marker rings the point and leaves it clear, so the target's own
    // label stays readable; its label (what the target is) sits outside
    // the ring, above it or, near the top, below it, and is kept inside
    // the screenshot near the sides.
    const t0 = a.target || {};
    q('.marker-label').textContent = clip(str(t0.name) || str(t0.text) || str(a.action && a.action.kind) || 'target', 40);
    const zoom = q('.a-zoom');
    const closeUp = (p) => {
      if (!p || !img.naturalWidth) { zoom.hidden = true; return; }
      // Twice the image's own pixels, the point in the middle of the
      // view whatever its size.
      const zi = q('.a-zoom-img');
      zoom.hidden = false;
      zi.style.backgroundImage = 'url("' + img.src.replace(/["\\]/g, '') + '")';
      zi.style.width = (2 * img.naturalWidth) + 'px';
      zi.style.height = (2 * img.naturalHeight) + 'px';
      zi.style.marginLeft = (-2 * (p.x + 0.5)) + 'px';
      zi.style.marginTop = (-2 * (p.y + 0.5)) + 'px';
    };
    // The element's frame, in the image's pixels as fractions of its
    // size, like the marker.
    const frame = q('.a-element');
    const placeBox = () => {
      if (!box || !img.naturalWidth || !img.naturalHeight) { frame.hidden = true; return; }
      frame.style.left = (100 * box.min.x / img.naturalWidth) + '%';
      frame.style.top = (100 * box.min.y / img.naturalHeight) + '%';
      frame.style.width = (100 * (box.max.x - box.min.x) / img.naturalWidth) + '%';
      frame.style.height = (100 * (box.max.y - box.min.y) / img.naturalHeight) + '%';
      frame.hidden = false;
    };
    img.addEventListener('load', () => {
      placeBox();
      place(marker, m);
      if (m) {
        marker.classList.toggle('label-below', m.y < img.naturalHeight * 0.2);
        marker.classList.toggle('label-left', m.x > img.naturalWidth * 0.8);
        marker.classList.toggle('label-right', m.x < img.naturalWidth * 0.2);
      }
      place(editMarker, card._edit);
      closeUp(m);
    });
    const src = shotURL(a.shot, a.session);
    if (src) img.src = src; else q('.a-shot-wrap').hidden = true;
    q('.a-where').textContent = (m ? 'Target at (' + Math.round(m.x) + ', ' + Math.round(m.y) + ') in screenshot pixels.' : 'No point on the screen.') +
      (box ? ' ' + boxText.charAt(0).toUpperCase() + boxText.slice(1) + '.' : '');

    q('.a-rule-name').textContent = a.rule || '(none)';
    q('.a-reason').textContent = a.reason || '(none given)';
    // A provider's safety checks: its code and its message, as it wrote
    // them; approving acknowledges them to the provider.
    for (const c of a.safety) {
      if (!c || typeof c !== 'object') continue;
      q('.a-rule').append(el('dt', { text: 'Safety check' }),
        el('dd', { class: 'a-safety', text: clip([str(c.code), str(c.message)].filter(Boolean).join(': ') || str(c.id), 500) }));
    }
    const dl = q('.a-target');
    // A request for safety checks alone has no action, so no target.
    q('.a-target-head').hidden = dl.hidden = !a.action && a.safety.length > 0;
    const t = a.target || {};
    const rows = [
      ['Role', t.role], ['Name', t.name], ['Element', t.tag], ['Input type', t.inputType],
      ['Autocomplete', t.autocomplete], ['Link', t.href], ['Opens in', t.linkTarget],
      ['Download', t.download ? 'yes' : ''], ['Form', [str(t.formMethod).toUpperCase(), str(t.formAction)].filter(Boolean).join(' ')],
      ['Frame', t.frameUrl], ['Text', t.text],
    ];
    let any = false;
    for (const [k, v] of rows) {
      if (!str(v)) continue;
      any = true;
      dl.append(el('dt', { text: k }), el('dd', { class: 't-' + k.toLowerCase().replace(/\s+/g, '-'), text: clip(v, 500) }));
    }
    if (a.noDom) {
      // A desktop or VNC display: the rules saw the action alone.
      dl.append(el('dt', { text: 'Element' }),
        el('dd', { class: 't-nodom', text: 'unknown: this display has no DOM (' + (a.note || 'no DOM: decided on the action alone') + ')' }));
    } else if (!any) dl.append(el('dt', { text: 'Element' }), el('dd', { text: 'nothing known' }));
    q('.a-model').textContent = a.modelText;

    // Labels need ids of their own per card.
    const link = (labelSel, inputSel, id) => { q(inputSel).id = id + n; q(labelSel).htmlFor = id + n; };
    link('.deny-label', '.deny-reason', 'deny-reason-');
    link('.ex-label', '.edit-x', 'edit-x-');
    link('.ey-label', '.edit-y', 'edit-y-');
    link('.et-label', '.edit-text', 'edit-text-');

    const kind = str(a.action && a.action.kind);
    const hasText = a.action && (kind === 'type' || typeof a.action.text === 'string' && a.action.text !== '');
    const hasPoint = !!pt(a.action && a.action.at) || !!m;
    q('.edit-point').hidden = !hasPoint;
    q('.edit-point-hint').hidden = !hasPoint;
    q('.edit-text-row').hidden = !hasText;
    if (hasPoint && m) { q('.edit-x').value = Math.round(m.x); q('.edit-y').value = Math.round(m.y); }
    if (hasText) q('.edit-text').value = str(a.action.text);
    if (!hasPoint && !hasText) q('.edit-toggle').hidden = true;

    const setEdit = (p) => {
      card._edit = p;
      q('.edit-x').value = p.x;
      q('.edit-y').value = p.y;
      place(editMarker, p);
    };
    q('.edit-toggle').addEventListener('click', () => {
      const open = q('.a-edit').hidden;
      q('.a-edit').hidden = !open;
      q('.edit-toggle').setAttribute('aria-expanded', String(open));
      q('.a-shot-wrap').classList.toggle('editing', open && hasPoint);
      if (!open) { card._edit = null; editMarker.hidden = true; }
      if (open) (hasPoint ? q('.edit-x') : q('.edit-text')).focus();
    });
    img.addEventListener('click', (ev) => {
      if (q('.a-edit').hidden || !hasPoint) return;
      const p = imagePoint(img, ev);
      if (p) setEdit(p);
    });
    for (const s of ['.edit-x', '.edit-y']) {
      q(s).addEventListener('input', () => {
        const p = { x: Number(q('.edit-x').value), y: Number(q('.edit-y').value) };
        if (Number.isFinite(p.x) && Number.isFinite(p.y)) { card._edit = p; place(editMarker, p); }
      });
    }

    q('.approve').addEventListener('click', () => decide(a, card, { decision: 'approve' }));
    q('.deny').addEventListener('click', () => decide(a, card, { decision: 'deny', reason: q('.deny-reason').value.trim() }));
    q('.deny-reason').addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') { ev.preventDefault(); q('.deny').click(); }
    });
    q('.edit-send').addEventListener('click', () => {
      const edit = {};
      if (hasPoint) {
        const x = Number(q('.edit-x').value), y = Number(q('.edit-y').value);
        if (!Number.isFinite(x) || !Number.isFinite(y) || q('.edit-x').value === '' || q('.edit-y').value === '') {
          q('.a-error').textContent = 'Enter both x and y.';
          return;
        }
        if (!m || x !== Math.round(m.x) || y !== Math.round(m.y)) edit.at = { x, y };
      }
      if (hasText && q('.edit-text').value !== str(a.action.text)) edit.text = q('.edit-text').value;
      if (!edit.at && edit.text === undefined) {
        q('.a-error').textContent = 'Nothing was changed; use Approve instead.';
        return;
      }
      decide(a, card, { decision: 'edit', edit });
    });
    return card;
  }

  async function decide(a, card, body) {
    const err = card.querySelector('.a-error');
    err.textContent = '';
    const buttons = card.querySelectorAll('button');
    for (const b of buttons) b.disabled = true;
    try {
      await api('POST', '/approvals/' + seg(a.approvalId), body);
      removeApproval(a.approvalId);
      announce(body.decision === 'deny' ? 'Denied.' : 'Approved.');
      refreshLists();
    } catch (e) {
      if (e instanceof AuthError) return;
      if (e instanceof APIError && e.status === 409) {
        removeApproval(a.approvalId);
        announce('That request was already decided.');
        return;
      }
      err.textContent = 'Could not send the decision: ' + errText(e);
      for (const b of buttons) b.disabled = false;
    }
  }

  function tickTimers() {
    const now = Date.now();
    for (const t of document.querySelectorAll('.a-timer')) {
      const d = new Date(t.dataset.deadline || '');
      if (isNaN(d) || d.getFullYear() < 2000) { t.textContent = 'No deadline'; continue; }
      const left = Math.ceil((d - now) / 1000);
      if (left <= 0) {
        t.textContent = 'Time is up: counts as a denial';
        t.classList.add('expired');
        continue;
      }
      const mm = Math.floor(left / 60), ss = String(left % 60).padStart(2, '0');
      t.textContent = 'Decide within ' + mm + ':' + ss;
      t.setAttribute('aria-label', 'Time left to decide: ' + mm + ' minutes ' + ss + ' seconds');
    }
  }

  // ---- new task -------------------------------------------------------------

  // The demo's task, as examples/demo-anthropic.yaml words it. The
  // recording does not depend on it, but the operator reads it.
  const demoTask = 'Check in the passenger Ada Lovelace, open the command palette with Ctrl+Shift+K, ' +
    'reserve seat 30 from the seat list, and drag the ticket into the tray.';

  // A script for the demo app, in pixels of its 1280x800 screenshot.
  const demoScript = JSON.stringify([
    { say: "I type the passenger's name and press Check in.",
      actions: [{ type: 'click', x: 227, y: 141 }, { type: 'type', text: 'Ada Lovelace' }, { type: 'click', x: 482, y: 141 }] },
    { say: 'Now the command palette.', actions: [{ type: 'keypress', keys: ['CTRL', 'SHIFT', 'K'] }] },
    { say: 'Done: Ada Lovelace is checked in and the palette is open.' },
  ], null, 2);

  // taskKind shows the fields of the chosen kind of model and, when reset,
  // fills in what that kind starts from.
  function taskKind(reset) {
    const f = $('new-task-form');
    const kind = (f.querySelector('input[name=kind]:checked') || {}).value || 'demo';
    $('nt-demo-note').hidden = kind !== 'demo';
    $('nt-script-row').hidden = kind !== 'script';
    $('nt-provider-row').hidden = kind !== 'provider';
    $('nt-url-hint').hidden = kind === 'provider';
    $('nt-url').readOnly = kind === 'demo';
    if (!reset) return;
    const was = f.dataset.kind;
    f.dataset.kind = kind;
    // Values the operator typed stay; defaults follow the kind.
    const fresh = (el, v) => { if (!el.value || el.dataset.auto === 'true') { el.value = v; el.dataset.auto = 'true'; } };
    if (kind === 'demo') {
      $('nt-url').value = 'demo:/';
      $('nt-url').dataset.auto = 'true';
      fresh($('nt-task'), demoTask);
    } else if (was === 'demo' && $('nt-url').dataset.auto === 'true') {
      $('nt-url').value = kind === 'script' ? 'demo:/' : '';
    }
    if (kind === 'script') {
      fresh($('nt-script'), demoScript);
      fresh($('nt-task'), 'Check in Ada Lovelace (a scripted run on the demo app).');
    }
    if (kind === 'provider' && $('nt-task').dataset.auto === 'true') $('nt-task').value = '';
    // Offline runs ask before every action, so there is something to
    // decide; a real model, before what the rules flag.
    $('nt-supervise').value = kind === 'provider' ? 'flagged' : 'all';
  }

  async function startTask(ev) {
    ev.preventDefault();
    const f = ev.target;
    const err = $('nt-error');
    err.textContent = '';
    const task = f.task.value.trim();
    if (!task) { err.textContent = 'Describe the task.'; return; }
    const kind = (f.querySelector('input[name=kind]:checked') || {}).value || 'demo';
    const body = {
      title: clip(task, 80),
      messages: [{ role: 'user', content: task }],
      approvals: { supervise: f.supervise.value },
    };
    if (kind === 'demo') {
      body.model = { provider: 'demo' };
    } else if (kind === 'script') {
      let turns;
      try { turns = JSON.parse(f.script.value); } catch (e) {
        err.textContent = 'The script is not JSON: ' + str(e.message);
        $('nt-script').focus();
        return;
      }
      if (!Array.isArray(turns) || !turns.length) {
        err.textContent = 'The script is a JSON list of turns: [{"say": "...", "actions": [{"type": "click", "x": 10, "y": 20}]}]';
        $('nt-script').focus();
        return;
      }
      body.model = { provider: 'script', turns };
    } else {
      body.model = { provider: f.provider.value };
      if (f.model.value.trim()) body.model.name = f.model.value.trim();
    }
    if (kind !== 'demo' && f.start_url.value.trim()) body.start_url = f.start_url.value.trim();
    const steps = Number(f.max_steps.value);
    if (Number.isInteger(steps) && steps > 0) body.max_steps = steps;
    const submit = f.querySelector('button[type=submit]');
    submit.disabled = true;
    try {
      const id = await createSession(body);
      f.reset();
      for (const el of f.querySelectorAll('[data-auto]')) delete el.dataset.auto;
      taskKind(true);
      location.hash = '#/session/' + seg(id);
      refreshLists();
    } catch (e) {
      if (!(e instanceof AuthError)) err.textContent = 'Could not start: ' + errText(e);
    } finally {
      submit.disabled = false;
    }
  }

  // createSession sends PUT /session and resolves with the new session's id
  // as soon as it is known.
  async function createSession(body) {
    const id = await streamRequest('PUT', '/session', body);
    if (!id) throw new Error('the server did not name the session');
    return id;
  }

  // sendMessage continues the open session with the operator's message.
  async function sendMessage(ev) {
    ev.preventDefault();
    const id = state.current;
    const text = $('msg-text').value.trim();
    $('msg-error').textContent = '';
    if (!id || !text) return;
    const submit = $('msg-form').querySelector('button[type=submit]');
    submit.disabled = true;
    try {
      await streamRequest('POST', '/session/' + seg(id), { messages: [{ role: 'user', content: text }] });
      $('msg-text').value = '';
    } catch (e) {
      if (!(e instanceof AuthError)) $('msg-error').textContent = 'Could not send: ' + errText(e);
    } finally {
      submit.disabled = false;
    }
  }

  // streamRequest sends a request the server answers with an SSE stream
  // (PUT /session, POST /session/:id). It resolves once the answer starts,
  // with the session id from X-Session-Id or the stream's session event
  // ('' if neither names one); the rest of the stream is read to its end in
  // the background, since the live view follows the session's own events.
  async function streamRequest(method, path, body) {
    const r = await fetch(path, {
      method,
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream', 'X-CSRF-Token': csrfToken() },
      body: JSON.stringify(body),
    });
    if (r.status === 401) { showLogin(); throw new AuthError('not logged in'); }
    if (!r.ok) {
      let msg = '';
      try { msg = str((await r.json()).error); } catch (_) { /* not JSON */ }
      throw new APIError(r.status, msg || r.statusText);
    }
    let id = r.headers.get('X-Session-Id') || '';
    const reader = r.body ? r.body.getReader() : null;
    if (!reader || id) {
      if (reader) reader.read().then(function more(x) { return x.done ? null : reader.read().then(more); }).catch(() => {});
      return id;
    }
    const dec = new TextDecoder();
    let buf = '';
    let resolveID;
    const named = new Promise((res) => { resolveID = res; });
    const drain = async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        if (id) continue;
        buf += dec.decode(value, { stream: true });
        let i;
        while (!id && (i = buf.search(/\r?\n\r?\n/)) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i).replace(/^\r?\n\r?\n/, '');
          let type = 'message', data = '';
          for (const line of block.split(/\r?\n/)) {
            if (line.startsWith('event:')) type = line.slice(6).trim();
            else if (line.startsWith('data:')) data += line.slice(5).replace(/^ /, '');
          }
          if (type === 'session') {
            try { id = str(JSON.parse(data).sessionId); } catch (_) { /* keep looking */ }
            if (id) resolveID(id);
          }
        }
      }
    };
    const finished = drain().catch(() => {});
    return Promise.race([named, finished.then(() => id)]);
  }

  document.addEventListener('DOMContentLoaded', boot);
})();
