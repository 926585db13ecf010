/**
 * The dashboard's browser script, as a string the page inlines (no build step, no library, no CDN: it works
 * offline). It reads the tenant's key from the page's boot data and calls the same /v1 report routes any client
 * would. Everything it shows is put in the page with textContent and setAttribute, never as markup, so a session
 * id or a tool name sent by a client cannot inject anything.
 *
 * Plain ES2017 in a String.raw literal: no backticks and no dollar-brace inside.
 */
export const CLIENT_SCRIPT = String.raw`
(function () {
  'use strict';
  var boot = JSON.parse(document.getElementById('boot').textContent);
  var KEY = boot.key;
  // A ?key= (local use) leaves the address bar and the history entry at once.
  if (location.search) history.replaceState(null, '', location.pathname + location.hash);
  var SVG_NS = 'http://www.w3.org/2000/svg';
  var MAX_PAGES = 10;
  var current = null;

  function set(e, attrs) {
    if (!attrs) return;
    Object.keys(attrs).forEach(function (k) {
      if (attrs[k] !== undefined && attrs[k] !== null) e.setAttribute(k, String(attrs[k]));
    });
  }
  function append(e, children) {
    if (children === undefined || children === null) return;
    (Array.isArray(children) ? children : [children]).forEach(function (c) {
      if (c === null || c === undefined) return;
      e.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
    });
  }
  function el(tag, attrs, children) { var e = document.createElement(tag); set(e, attrs); append(e, children); return e; }
  function svg(tag, attrs, children) { var e = document.createElementNS(SVG_NS, tag); set(e, attrs); append(e, children); return e; }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }
  function byId(id) { return document.getElementById(id); }

  function usd(x) {
    if (x === null || x === undefined) return '-';
    var a = Math.abs(x);
    return (x < 0 ? '-$' : '$') + (a >= 100 ? a.toFixed(0) : a >= 1 ? a.toFixed(2) : a.toFixed(4));
  }
  function int(x) { return Number(x).toLocaleString('en-US'); }
  function pct(x) { return x === null || x === undefined ? '-' : (x * 100).toFixed(x > 0 && x < 0.1 ? 1 : 0) + '%'; }
  function when(s) { return s.slice(0, 19).replace('T', ' ') + ' UTC'; }
  function short(v) {
    if (v >= 1e6) return (v / 1e6).toFixed(v >= 1e7 ? 0 : 1) + 'M';
    if (v >= 1e3) return (v / 1e3).toFixed(v >= 1e4 ? 0 : 1) + 'K';
    return String(Math.round(v));
  }
  function nice(v) {
    var p = Math.pow(10, Math.floor(Math.log10(v)));
    var m = v / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }

  function api(path) {
    return fetch(path, { headers: { authorization: 'Bearer ' + KEY }, cache: 'no-store', credentials: 'omit' }).then(function (res) {
      return res.json().then(function (body) {
        if (!res.ok) throw new Error((body && body.error && body.error.message) || 'HTTP ' + res.status);
        return body;
      });
    });
  }

  function showError(e) {
    var box = byId('error');
    box.textContent = e ? 'Could not load: ' + (e.message || String(e)) : '';
    box.hidden = !e;
  }

  function loadSessions() {
    var rows = [];
    var missing = 0;
    var pages = 0;
    function page(cursor) {
      pages++;
      return api('/v1/report?limit=50' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : '')).then(function (r) {
        rows = rows.concat(r.sessions);
        missing += r.missing;
        if (r.cursor && pages < MAX_PAGES) return page(r.cursor);
        return { rows: rows, missing: missing, more: Boolean(r.cursor) };
      });
    }
    return page(null);
  }

  function card(field, label, value, hint) {
    return el('div', { class: 'card', 'data-field': field }, [el('div', { class: 'label' }, label), el('div', { class: 'value' }, value), hint ? el('div', { class: 'hint' }, hint) : null]);
  }

  function sum(rows, f) { return rows.reduce(function (n, r) { return n + f(r); }, 0); }

  function renderTotals(list) {
    var rows = list.rows;
    var offloaded = sum(rows, function (r) { return r.offloaded; });
    var recalled = sum(rows, function (r) { return r.offloaded_recalled; });
    var box = clear(byId('totals'));
    append(box, [
      card('sessions', 'Sessions', int(rows.length), list.more ? 'first ' + int(rows.length) + ' shown' : null),
      card('saved_usd', estimateLabel(rows.every(function (r) { return billed(r).estimate_basis === 'modelled'; }) ? 'modelled' : 'tokens_removed'), usd(sum(rows, function (r) { return r.saved_usd; })), int(sum(rows, function (r) { return r.saved_tokens; })) + ' tokens'),
      billedCard(rows),
      card('would_save_usd', 'Would save (shadow)', usd(sum(rows, function (r) { return r.would_save_usd; })), int(sum(rows, function (r) { return r.would_save_tokens; })) + ' tokens'),
      card('recall_rate', 'Recall rate', pct(offloaded === 0 ? null : recalled / offloaded), int(recalled) + ' of ' + int(offloaded) + ' offloaded read back'),
      card('gate', 'Gate fired / declined', int(sum(rows, function (r) { return r.gate_fired; })) + ' / ' + int(sum(rows, function (r) { return r.gate_declined; }))),
    ]);
    var shadowed = rows.filter(function (r) { return r.mode === 'shadow'; });
    var goLive = byId('shadow-note');
    goLive.hidden = shadowed.length === 0;
    goLive.textContent = shadowed.length === 0 ? '' : 'shadow: ' + int(shadowed.length) + ' session(s) would save ' + usd(sum(shadowed, function (r) { return r.would_save_usd; })) + ' so far; one line to go live: {"tool_result_offload_shadow":false} in OFFLOAD_DEFAULT_CONFIG (every session), or PUT /v1/sessions/{id}/config (one).';
    var note = byId('index-note');
    note.textContent = 'Sessions are listed from the KV index, which may lag by about a minute' + (list.missing ? '; ' + int(list.missing) + ' listed session(s) no longer exist' : '') + '.';
  }

  function billed(r) { return r.billed || { turns_measured: 0, turns_unmeasured: 0, usd: 0, hops_usd: 0, saved_usd: 0, prompt_tokens: 0, cache_read_tokens: 0 }; }

  // The estimate is a saving once a measured turn grounds it; before, only a value of the tokens
  // taken out (their position's rate), and labelled so.
  function estimateLabel(basis) { return basis === 'tokens_removed' ? 'Tokens removed, at their rate (no usage measured)' : 'Dollars saved (estimate)'; }

  // A billed saving with turns whose usage never came is incomplete: said, with their count.
  function gaps(n) { return n ? ' (incomplete: ' + int(n) + ' turn' + (n === 1 ? '' : 's') + ' without usage, modelled)' : ''; }

  // What the provider billed (its usage x the price table), beside the estimate: the bill, the
  // saving against the clients' own requests, the recall hops' part, the measured cache-read share.
  function billedCard(rows) {
    var measured = sum(rows, function (r) { return billed(r).turns_measured; });
    if (measured === 0) return card('billed_usd', 'Billed saving', '-', 'no measured usage yet');
    var prompt = sum(rows, function (r) { return billed(r).prompt_tokens; });
    var read = sum(rows, function (r) { return billed(r).cache_read_tokens; });
    return card('billed_usd', 'Billed saving', usd(sum(rows, function (r) { return billed(r).saved_usd; })),
      'bill ' + usd(sum(rows, function (r) { return billed(r).usd; })) + ', hops ' + usd(sum(rows, function (r) { return billed(r).hops_usd; })) + ', cache read ' + pct(prompt === 0 ? null : read / prompt) + ', ' + int(measured) + ' turns measured' + gaps(sum(rows, function (r) { return billed(r).turns_unmeasured || 0; })) + dearer(rows));
  }

  // The sessions offloading made dearer on the bill, counted rather than netted into the sum above
  // (the same rule as the report's totals.billed.dearer: a billed saving below 0).
  function dearer(rows) {
    var measured = rows.filter(function (r) { return billed(r).turns_measured > 0; });
    var losing = measured.filter(function (r) { return billed(r).saved_usd < 0; });
    if (losing.length === 0) return '; no session dearer';
    var worst = losing.reduce(function (w, r) { var b = billed(r); return b.counterfactual_usd > 0 ? Math.max(w, -b.saved_usd / b.counterfactual_usd) : w; }, 0);
    return '; ' + int(losing.length) + ' of ' + int(measured.length) + ' sessions dearer (worst +' + (worst * 100).toFixed(worst < 0.01 ? 2 : 1) + '%)';
  }

  function renderSessions(list) {
    var body = clear(byId('sessions-body'));
    var rows = list.rows.slice().sort(function (a, b) { return a.last_active < b.last_active ? 1 : a.last_active > b.last_active ? -1 : 0; });
    if (rows.length === 0) {
      append(body, el('tr', null, el('td', { colspan: 8, class: 'muted' }, 'No sessions yet: compact a request with POST /v1/sessions/{id}/compact.')));
      return rows;
    }
    rows.forEach(function (r) {
      var open = el('button', { type: 'button', class: 'link' }, r.session);
      open.addEventListener('click', function () { select(r.session); });
      var tr = el('tr', { 'data-session': r.session, class: r.session === current ? 'selected' : null }, [
        el('td', null, open),
        el('td', null, modeBadge(r.mode)),
        el('td', { class: 'num' }, int(r.turns_logged)),
        el('td', { class: 'num' }, usd(r.saved_usd)),
        el('td', { class: 'num', title: billed(r).turns_unmeasured ? gaps(billed(r).turns_unmeasured).trim() : null }, billed(r).turns_measured ? usd(billed(r).saved_usd) + (billed(r).turns_unmeasured ? ' *' : '') : '-'),
        el('td', { class: 'num' }, usd(r.would_save_usd)),
        el('td', { class: 'num' }, pct(r.recall_rate)),
        el('td', null, when(r.last_active)),
      ]);
      body.appendChild(tr);
    });
    return rows;
  }

  function chart(turns) {
    var W = 760, H = 280, L = 60, R = 20, T = 16, B = 40;
    var root = svg('svg', { id: 'chart', viewBox: '0 0 ' + W + ' ' + H, width: W, height: H, role: 'img', 'aria-label': 'Estimated prompt tokens per turn, without and with offload', 'data-turns': turns.length });
    if (turns.length === 0) {
      root.appendChild(svg('text', { x: W / 2, y: H / 2, 'text-anchor': 'middle', class: 'tick' }, 'No turns logged yet.'));
      return root;
    }
    var max = 1;
    turns.forEach(function (t) { max = Math.max(max, t.tokens_before, t.tokens_after); });
    // Four gridline steps of a round size (1, 2 or 5 times a power of ten).
    var step = nice(max / 4);
    max = step * 4;
    var n = turns.length;
    function x(i) { return n === 1 ? L + (W - L - R) / 2 : L + (i * (W - L - R)) / (n - 1); }
    function y(v) { return T + (H - T - B) * (1 - v / max); }
    for (var k = 0; k <= 4; k++) {
      var v = step * k;
      root.appendChild(svg('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), class: 'grid' }));
      root.appendChild(svg('text', { x: L - 8, y: y(v) + 4, 'text-anchor': 'end', class: 'tick' }, short(v)));
    }
    var every = Math.max(1, Math.ceil(n / 8));
    function label(i) { root.appendChild(svg('text', { x: x(i), y: H - B + 18, 'text-anchor': 'middle', class: 'tick' }, 'turn ' + turns[i].turn)); }
    for (var i = 0; i < n; i += every) label(i);
    if ((n - 1) % every !== 0) label(n - 1);
    root.appendChild(svg('text', { x: 12, y: T + (H - T - B) / 2, class: 'tick', transform: 'rotate(-90 12 ' + (T + (H - T - B) / 2) + ')', 'text-anchor': 'middle' }, 'prompt tokens'));
    function series(name, title, value) {
      var pts = turns.map(function (t, i) { return x(i).toFixed(1) + ',' + y(value(t)).toFixed(1); }).join(' ');
      root.appendChild(svg('polyline', { points: pts, class: 'line ' + name, 'data-series': name, fill: 'none' }));
      if (n > 300) return;
      turns.forEach(function (t, i) {
        // In a shadow turn the request went out full: only the "with offload" point is hypothetical (hollow).
        var hypothetical = name === 'after' && t.shadow;
        var dot = svg('circle', { cx: x(i).toFixed(1), cy: y(value(t)).toFixed(1), r: 4, class: 'dot ' + name + (hypothetical ? ' shadow' : ''), 'data-series': name, 'data-turn': t.turn });
        var what = hypothetical ? title + ' (shadow: would have sent)' : title;
        dot.appendChild(svg('title', null, 'turn ' + t.turn + ', ' + what + ': ' + int(value(t)) + ' tokens'));
        root.appendChild(dot);
      });
    }
    series('before', 'without offload', function (t) { return t.tokens_before; });
    series('after', 'with offload', function (t) { return t.tokens_after; });
    return root;
  }

  function gateCells(g) {
    if (!g) return [el('td', { class: 'muted', colspan: 6 }, 'gate not consulted')];
    return [
      el('td', { class: g.fire ? 'fire' : 'decline' }, (g.fire ? 'fired ' : 'declined ') + usd(g.net_usd)),
      el('td', { class: 'num' }, usd(g.reprefill_saving_usd)),
      el('td', { class: 'num' }, usd(g.stub_carry_cost_usd)),
      el('td', { class: 'num' }, usd(g.invalidation_cost_usd)),
      el('td', { class: 'num' }, usd(g.expected_recall_hop_cost_usd)),
      el('td', { class: 'num' }, usd(g.tool_declaration_cost_usd)),
    ];
  }

  function renderDecisions(last) {
    var box = clear(byId('decisions'));
    if (!last) {
      append(box, el('p', { class: 'muted' }, 'No turn has recorded its decisions yet.'));
      return;
    }
    append(box, el('p', { class: 'muted' }, 'Turn ' + last.turn + ' at ' + when(last.at) + (last.shadow ? ' (shadow: decided and recorded, request sent unchanged)' : '') + (last.decisions_total > last.decisions.length ? '; the last ' + last.decisions.length + ' of ' + last.decisions_total + ' results' : '') + '.'));
    var head = ['result', 'tool', 'tier', 'action', 'tokens: full / sent', 'reason', 'gate: net', 'saving', 'stub carry', 'invalidation', 'recall hop', 'tool decl.'];
    var table = el('table', { id: 'decisions-table' }, [el('thead', null, el('tr', null, head.map(function (h) { return el('th', null, h); }))), el('tbody')]);
    var body = table.querySelector('tbody');
    last.decisions.forEach(function (d) {
      body.appendChild(
        el('tr', { 'data-tool-use-id': d.tool_use_id }, [
          el('td', { class: 'mono' }, d.tool_use_id),
          el('td', null, d.tool_name),
          el('td', null, d.tier),
          el('td', null, d.action + (d.sticky ? ' (sticky)' : '')),
          el('td', { class: 'num' }, int(d.tokens) + ' / ' + int(d.sent_tokens)),
          el('td', { class: 'reason' }, d.reason),
        ].concat(gateCells(d.gate))),
      );
    });
    box.appendChild(el('div', { class: 'scroll' }, table));
  }

  function modeBadge(mode) { return el('span', { class: 'mode ' + (mode || 'none') }, mode || 'no turns'); }

  function stat(field, label, value) { return el('div', { class: 'stat', 'data-field': field }, [el('dt', null, label), el('dd', null, value)]); }

  function renderSession(r) {
    var box = clear(byId('session'));
    box.hidden = false;
    var t = r.totals;
    append(box, [
      el('h2', null, ['Session ', el('span', { class: 'mono', id: 'session-id' }, r.session), ' ', modeBadge(r.mode)]),
      r.note ? el('p', { class: 'note', id: 'session-note' }, r.note) : null,
      el('div', { class: 'legend' }, [
        el('span', { class: 'key before' }, 'without offload'),
        el('span', { class: 'key after' }, 'with offload'),
        el('span', { class: 'key shadow' }, 'shadow turn (would have sent)'),
      ]),
      chart(r.turns),
      el('dl', { class: 'stats' }, [
        stat('saved_usd', estimateLabel(billed(t).estimate_basis), usd(t.saved_usd) + ' (' + int(t.saved_tokens) + ' tokens)'),
        stat('billed_usd', 'Billed', billed(t).turns_measured ? usd(billed(t).usd) + ' (recall hops ' + usd(billed(t).hops_usd) + '; ' + int(billed(t).turns_measured) + ' turns measured)' : 'no measured usage yet'),
        stat('billed_saved_usd', 'Billed saving', billed(t).turns_measured ? usd(billed(t).saved_usd) + ' against ' + usd(billed(t).counterfactual_usd) + ' unchanged' + gaps(billed(t).turns_unmeasured) : '-'),
        stat('cache_read_share', 'Cache-read share (measured)', pct(billed(t).cache_read_share)),
        stat('would_save_usd', 'Would save (shadow turns)', usd(t.would_save_usd) + ' (' + int(t.would_save_tokens) + ' tokens)'),
        stat('turns', 'Turns logged', int(t.turns_logged) + (t.shadow_turns ? ' (' + int(t.shadow_turns) + ' shadow)' : '')),
        stat('offloaded', 'Offloaded results', int(t.offloaded)),
        stat('recalls', 'Recalls', int(t.recalls)),
        stat('recall_rate', 'Recall rate', pct(t.recall_rate)),
        stat('gate', 'Gate fired / declined', int(t.gate_fired) + ' / ' + int(t.gate_declined)),
      ]),
      el('h3', null, 'Decisions of the last turn'),
      el('div', { id: 'decisions' }),
    ]);
    renderDecisions(r.last_turn);
  }

  function select(session) {
    location.hash = '#session=' + encodeURIComponent(session);
  }

  function fromHash() {
    var m = /^#session=(.+)$/.exec(location.hash);
    if (!m) return null;
    try { return decodeURIComponent(m[1]); } catch (e) { return null; }
  }

  function showSession(session) {
    current = session;
    Array.prototype.forEach.call(document.querySelectorAll('#sessions-body tr[data-session]'), function (tr) {
      tr.classList.toggle('selected', tr.getAttribute('data-session') === session);
    });
    return api('/v1/sessions/' + encodeURIComponent(session) + '/report').then(renderSession);
  }

  function refresh() {
    showError(null);
    return loadSessions()
      .then(function (list) {
        renderTotals(list);
        var rows = renderSessions(list);
        var wanted = fromHash() || (rows[0] && rows[0].session);
        if (wanted) return showSession(wanted);
      })
      .catch(showError);
  }

  window.addEventListener('hashchange', function () {
    var s = fromHash();
    if (s) showSession(s).catch(showError);
  });
  byId('tenant').textContent = boot.tenant;
  byId('refresh').addEventListener('click', refresh);
  refresh();
})();
`;
