// The cheng web canvas: draw a graph from the palette (`GET /api/nodes`), check each connection
// (`POST /api/graphs/check`), run it (`POST /api/runs`) and follow its events (Server-Sent
// Events), answering approval cards on the page. The contract is docs/guides/http.md.
//
// Text from the server or the user only ever reaches the page through `textContent` (never
// `innerHTML`), and Drawflow is never handed HTML: nodes are created empty and filled here.
'use strict';

(function () {
  /** Node statuses drawn as classes on a node (and as its `data-status`). */
  const STATUSES = ['queued', 'running', 'waiting', 'succeeded', 'failed', 'denied', 'cancelled', 'skipped'];
  /** Characters of live output kept per node (the oldest go first). */
  const OUTPUT_KEPT = 20000;
  const DENIED = 'LOCAL_EXECUTOR_APPROVAL_DENIED';

  const state = {
    palette: new Map(), // node type → its palette entry
    nodes: new Map(), // Drawflow id → {dfId, id, type, spec, ins, outs, inputs, config, after, el, …}
    loading: false, // a graph is being drawn: its connections are not checked one by one
    run: null, // the run being followed: {id, source}
    detail: null, // the run shown under History
  };
  let editor;

  const $ = (selector) => document.querySelector(selector);

  /** An element with `props` (`text`, `dataset`, `className`, any property) and children. */
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (key === 'text') node.textContent = value;
      else if (key === 'dataset') Object.assign(node.dataset, value);
      else node[key] = value;
    }
    node.append(...children);
    return node;
  }

  async function api(method, path, body) {
    const init = { method, headers: {}, credentials: 'same-origin' };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path, init);
    } catch (error) {
      return { status: 0, ok: false, data: { error: { message: 'the server cannot be reached: ' + error.message } } };
    }
    const text = await response.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch (_) {
      data = { error: { message: text } };
    }
    return { status: response.status, ok: response.ok, data };
  }

  function apiError(res) {
    const error = res.data && res.data.error;
    return (error && (error.message || error.code)) || 'HTTP ' + res.status;
  }

  function showMessage(text, kind) {
    const box = $('#message');
    box.textContent = text || '';
    box.dataset.kind = kind || 'error';
    box.hidden = !text;
  }

  const messageOf = (e) => (typeof e === 'string' ? e : (e && e.message) || JSON.stringify(e));
  const checkMessages = (data) => ((data && data.errors) || []).map(messageOf);

  // ----- the palette -------------------------------------------------------------------------

  async function loadPalette() {
    const res = await api('GET', '/api/nodes');
    const palette = $('#palette');
    if (!res.ok || !Array.isArray(res.data)) {
      palette.replaceChildren(el('p', { className: 'hint', text: 'No nodes: ' + apiError(res) }));
      return;
    }
    const groups = new Map();
    for (const spec of res.data) {
      state.palette.set(spec.id, spec);
      const category = spec.category || 'other';
      if (!groups.has(category)) groups.set(category, []);
      groups.get(category).push(spec);
    }
    palette.replaceChildren();
    for (const category of [...groups.keys()].sort()) {
      const group = el('details', { className: 'category', open: true, dataset: { category } }, el('summary', { text: category }));
      for (const spec of groups.get(category)) group.append(paletteItem(spec));
      palette.append(group);
    }
  }

  function paletteItem(spec) {
    const item = el('div', { className: 'palette-node', dataset: { nodeType: spec.id } },
      el('span', { className: 'title', text: spec.title || spec.id }), el('small', { text: spec.id }));
    if (spec.available === false) {
      item.classList.add('unavailable');
      item.title = spec.unavailable_reason || 'unavailable';
      item.setAttribute('aria-disabled', 'true');
      item.draggable = false;
      return item;
    }
    item.title = (spec.description || '') + '\n\nDrag onto the canvas, or click to add.';
    item.draggable = true;
    item.tabIndex = 0;
    item.setAttribute('role', 'button');
    item.addEventListener('dragstart', (event) => {
      event.dataTransfer.setData('application/x-cheng-node', spec.id);
      event.dataTransfer.setData('text/plain', spec.id);
      event.dataTransfer.effectAllowed = 'copy';
    });
    item.addEventListener('click', () => selectNode(addNode(spec.id)));
    item.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        selectNode(addNode(spec.id));
      }
    });
    return item;
  }

  /** Canvas coordinates of a point in the window. */
  function toCanvas(clientX, clientY) {
    const rect = editor.precanvas.getBoundingClientRect();
    return { x: (clientX - rect.x) / editor.zoom, y: (clientY - rect.y) / editor.zoom };
  }

  /** Where a clicked palette node goes: the next free slot in the visible part of the canvas. */
  function freeSpot() {
    const area = $('#drawflow').getBoundingClientRect();
    const origin = toCanvas(area.x, area.y);
    const n = state.nodes.size;
    return { x: origin.x + 140 + (n % 3) * 420, y: origin.y + 30 + Math.floor(n / 3) * 380 };
  }

  // ----- nodes on the canvas -----------------------------------------------------------------

  /** Input ports an edge may feed (engine and author ports are not ports on the canvas). */
  const connectable = (port) => port.audience === 'llm' || port.audience === 'capped';

  function freshId(type) {
    const base = type.split('/').pop().replace(/[^A-Za-z0-9_-]/g, '_') || 'node';
    const taken = new Set([...state.nodes.values()].map((n) => n.id));
    let id = base;
    for (let i = 2; taken.has(id); i++) id = base + '_' + i;
    return id;
  }

  /** Places a node of `type`; `given` (from a loaded graph) brings its id, inputs and config. */
  function addNode(type, x, y, given) {
    const spec = state.palette.get(type);
    if (!spec || (spec.available === false && !given)) return null;
    if (x === undefined) ({ x, y } = freeSpot());
    const ins = spec.inputs.filter(connectable).map((p) => p.name);
    const outs = spec.outputs.map((p) => p.name);
    const dfId = String(editor.addNode(type, ins.length, outs.length, x, y, 'cheng-node', {}, '', false));
    const node = {
      dfId, type, spec, ins, outs,
      id: (given && given.id) || freshId(type),
      inputs: Object.assign({}, given && given.inputs),
      config: Object.assign({}, given && given.config),
      after: (given && given.after) || [],
    };
    state.nodes.set(dfId, node);
    drawNode(node);
    return node;
  }

  function drawNode(node) {
    const box = document.getElementById('node-' + node.dfId);
    node.el = box;
    box.dataset.nodeId = node.id;
    box.dataset.nodeType = node.type;
    box.dataset.status = 'idle';
    const label = (dot, name, port) => {
      dot.dataset.port = name;
      dot.title = name + (port ? ' (' + port.type + (port.required ? ', required' : '') + ')' : '');
      dot.append(el('span', { className: 'port-label', text: name }));
    };
    const inputSpec = (name) => node.spec.inputs.find((p) => p.name === name);
    const outputSpec = (name) => node.spec.outputs.find((p) => p.name === name);
    box.querySelectorAll('.inputs .input').forEach((dot, i) => label(dot, node.ins[i], inputSpec(node.ins[i])));
    box.querySelectorAll('.outputs .output').forEach((dot, i) => label(dot, node.outs[i], outputSpec(node.outs[i])));
    node.idEl = el('div', { className: 'node-id', text: node.id });
    node.stateEl = el('div', { className: 'node-state' });
    node.outputEl = el('pre', { className: 'node-output', dataset: { outputFor: node.id } });
    box.querySelector('.drawflow_content_node').replaceChildren(
      node.idEl, el('div', { className: 'node-type', text: node.spec.title || node.type, title: node.type }),
      node.stateEl, node.outputEl);
  }

  const nodeById = (id) => [...state.nodes.values()].find((n) => n.id === id);

  function setStatus(node, status, note) {
    node.el.classList.remove(...STATUSES);
    if (status) node.el.classList.add(status);
    node.el.dataset.status = status || 'idle';
    node.stateEl.textContent = note === undefined ? status || '' : note;
  }

  function renameNode(node, id) {
    if (id === node.id) return true;
    if (!/^[^.\s]+$/.test(id)) {
      showMessage('A node id may not be empty or contain dots or whitespace.');
      return false;
    }
    if (nodeById(id)) {
      showMessage('Another node is already called ' + id + '.');
      return false;
    }
    for (const other of state.nodes.values()) other.after = other.after.map((a) => (a === node.id ? id : a));
    node.id = id;
    node.el.dataset.nodeId = id;
    node.idEl.textContent = id;
    node.outputEl.dataset.outputFor = id;
    return true;
  }

  // ----- the graph as `cheng graph run` takes it ---------------------------------------------

  const portIndex = (cls) => parseInt(cls.slice(cls.indexOf('_') + 1), 10) - 1;

  function exportGraph() {
    const data = editor.export().drawflow.Home.data;
    const nodes = [];
    const edges = [];
    for (const node of state.nodes.values()) {
      const entry = { id: node.id, type: node.type };
      if (Object.keys(node.config).length) entry.config = node.config;
      if (Object.keys(node.inputs).length) entry.inputs = node.inputs;
      if (node.after.length) entry.after = node.after;
      nodes.push(entry);
      for (const [cls, output] of Object.entries(data[node.dfId].outputs)) {
        for (const c of output.connections) {
          const target = state.nodes.get(String(c.node));
          edges.push({ from: node.id + '.' + node.outs[portIndex(cls)], to: target.id + '.' + target.ins[portIndex(c.output)] });
        }
      }
    }
    return { version: 1, nodes, edges };
  }

  function clearCanvas() {
    state.loading = true;
    editor.clear();
    state.loading = false;
    state.nodes.clear();
    showInspector(null);
  }

  /** Draws `graph` (laid out in columns by depth), reporting what could not be drawn. */
  function loadGraph(graph) {
    if (!graph || typeof graph !== 'object' || !Array.isArray(graph.nodes)) {
      showMessage('Not a cheng graph: it needs "version": 1, a "nodes" array and an "edges" array.');
      return false;
    }
    const problems = [];
    const edges = (Array.isArray(graph.edges) ? graph.edges : []).map((e) => {
      const split = (end) => {
        const at = String(end || '').lastIndexOf('.');
        return { node: String(end).slice(0, at), port: String(end).slice(at + 1) };
      };
      return { from: split(e.from), to: split(e.to), text: e.from + ' → ' + e.to };
    });
    const depth = new Map(graph.nodes.map((n) => [n.id, 0]));
    for (let pass = 0; pass < graph.nodes.length; pass++) {
      for (const e of edges) {
        if (depth.has(e.from.node) && depth.has(e.to.node)) {
          depth.set(e.to.node, Math.max(depth.get(e.to.node), depth.get(e.from.node) + 1));
        }
      }
    }
    clearCanvas();
    state.loading = true;
    const heights = [];
    for (const gnode of graph.nodes) {
      if (!state.palette.has(gnode.type)) {
        problems.push('node ' + gnode.id + ': no node type ' + gnode.type + ' on this server');
        continue;
      }
      const column = Math.min(depth.get(gnode.id) || 0, 20);
      const y = heights[column] || 30;
      const node = addNode(gnode.type, 140 + column * 460, y, gnode);
      heights[column] = y + Math.max(node.ins.length, node.outs.length) * 18 + 120;
    }
    for (const e of edges) {
      const from = nodeById(e.from.node);
      const to = nodeById(e.to.node);
      const out = from ? from.outs.indexOf(e.from.port) : -1;
      const inp = to ? to.ins.indexOf(e.to.port) : -1;
      if (out < 0 || inp < 0) {
        problems.push('edge ' + e.text + ': no such ports on the canvas');
        continue;
      }
      editor.addConnection(from.dfId, to.dfId, 'output_' + (out + 1), 'input_' + (inp + 1));
    }
    state.loading = false;
    showMessage(problems.length ? 'Not everything could be drawn:\n' + problems.join('\n') : '');
    return true;
  }

  function saveGraph() {
    const text = JSON.stringify(exportGraph(), null, 2) + '\n';
    const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
    const link = el('a', { href: url, download: 'graph.json' });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }

  function readGraph(text, source) {
    try {
      return loadGraph(JSON.parse(text));
    } catch (error) {
      showMessage(source + ' is not JSON: ' + error.message);
      return false;
    }
  }

  // ----- checking ----------------------------------------------------------------------------

  function markErrors(data) {
    for (const node of state.nodes.values()) {
      node.el.classList.remove('has-errors');
      node.el.removeAttribute('title');
    }
    for (const [id, entry] of Object.entries((data && data.node_errors) || {})) {
      const node = nodeById(id);
      if (!node) continue;
      node.el.classList.add('has-errors');
      node.el.title = ((entry && entry.errors) || []).map(messageOf).join('\n');
    }
  }

  function showCheck(data) {
    markErrors(data);
    if (data.ok) {
      const warnings = (data.warnings || []).map(messageOf);
      showMessage(warnings.length ? 'The graph is valid, with warnings:\n' + warnings.join('\n') : 'The graph is valid.', warnings.length ? 'warning' : 'ok');
    } else {
      showMessage('The graph is not valid:\n' + checkMessages(data).join('\n'));
    }
  }

  async function checkGraph() {
    const res = await api('POST', '/api/graphs/check', exportGraph());
    if (res.ok && res.data) showCheck(res.data);
    else showMessage('The check failed: ' + apiError(res));
  }

  /**
   * A new connection stays only if it brings no error of its own: the graph is checked with and
   * without it (a graph still being drawn may lack required inputs; that is not the edge's fault).
   */
  async function checkConnection(c) {
    const graph = exportGraph();
    const from = state.nodes.get(String(c.output_id));
    const to = state.nodes.get(String(c.input_id));
    if (!from || !to) return;
    const edge = { from: from.id + '.' + from.outs[portIndex(c.output_class)], to: to.id + '.' + to.ins[portIndex(c.input_class)] };
    const without = Object.assign({}, graph, { edges: graph.edges.filter((e) => e.from !== edge.from || e.to !== edge.to) });
    const [withIt, withoutIt] = await Promise.all([api('POST', '/api/graphs/check', graph), api('POST', '/api/graphs/check', without)]);
    if (!withIt.ok || !withoutIt.ok) {
      showMessage('The connection could not be checked: ' + apiError(withIt.ok ? withoutIt : withIt));
      return;
    }
    if (withIt.data.ok) {
      markErrors(withIt.data);
      return;
    }
    const before = new Set(checkMessages(withoutIt.data));
    const fresh = checkMessages(withIt.data).filter((m) => !before.has(m));
    if (fresh.length) {
      editor.removeSingleConnection(c.output_id, c.input_id, c.output_class, c.input_class);
      showMessage('Connection ' + edge.from + ' → ' + edge.to + ' removed:\n' + fresh.join('\n'));
    }
  }

  // ----- the side panel: the selected node's inputs ------------------------------------------

  function selectNode(node) {
    if (!node) return;
    showInspector(node);
  }

  function showInspector(node) {
    const panel = $('#inspector');
    if (!node) {
      delete panel.dataset.nodeId;
      panel.replaceChildren(el('p', { className: 'hint', text: 'Select a node to edit its inputs. Drag from an output dot to an input dot to connect; Delete removes the selected node or connection.' }));
      return;
    }
    panel.dataset.nodeId = node.id;
    const id = el('input', { id: 'node-id', type: 'text', value: node.id, spellcheck: false });
    id.addEventListener('change', () => {
      if (renameNode(node, id.value.trim())) panel.dataset.nodeId = node.id;
      else id.value = node.id;
    });
    const remove = el('button', { type: 'button', id: 'remove-node', className: 'small', text: 'Remove node' });
    remove.addEventListener('click', () => editor.removeNodeId('node-' + node.dfId));
    panel.replaceChildren(
      el('h2', { text: node.spec.title || node.type }),
      el('p', { className: 'node-kind' }, el('code', { text: node.type }), ' ', remove),
      el('p', { className: 'description', text: node.spec.description || '' }),
      el('label', { className: 'field', htmlFor: 'node-id' }, el('span', { className: 'name', text: 'id' }), id));
    const section = (title, ports, place, empty) => {
      const box = el('section', { className: 'ports', dataset: { place } }, el('h3', { text: title }));
      for (const port of ports) box.append(field(node, port, place));
      if (!ports.length) box.append(el('p', { className: 'hint', text: empty }));
      panel.append(box);
    };
    const inputs = node.spec.inputs;
    section('Agent inputs', inputs.filter(connectable), 'inputs', 'None.');
    section('Author settings', inputs.filter((p) => p.audience === 'author'), 'config', 'None.');
  }

  /** One input's row: its widget (from the palette) writing into `node[place]`. */
  function field(node, port, place) {
    const bag = node[place];
    const has = bag[port.name] !== undefined && bag[port.name] !== null;
    const current = bag[port.name];
    const set = (value) => {
      if (value === undefined) delete bag[port.name];
      else bag[port.name] = value;
    };
    const shown = (value) => (typeof value === 'string' ? value : JSON.stringify(value));
    const fallback = port.default === null || port.default === undefined ? '' : shown(port.default);
    const widget = port.widget || 'text';
    const idFor = 'field-' + place + '-' + port.name;
    let control;
    if (widget === 'checkbox') {
      control = el('input', { type: 'checkbox', checked: has ? current === true : port.default === true });
      control.addEventListener('change', () => set(control.checked === (port.default === true) ? undefined : control.checked));
    } else if (widget === 'select') {
      control = el('select', {}, el('option', { value: '', text: fallback ? 'default (' + fallback + ')' : '—' }));
      for (const choice of port.choices || []) control.append(el('option', { value: choice, text: choice }));
      control.value = has ? String(current) : '';
      control.addEventListener('change', () => set(control.value === '' ? undefined : control.value));
    } else if (widget === 'number') {
      control = el('input', { type: 'number', value: has ? String(current) : '', placeholder: fallback });
      if (port.min !== null && port.min !== undefined) control.min = port.min;
      if (port.max !== null && port.max !== undefined) control.max = port.max;
      control.addEventListener('input', () => set(control.value === '' ? undefined : Number(control.value)));
    } else if (widget === 'text') {
      control = el('input', { type: 'text', value: has ? shown(current) : '', placeholder: fallback, spellcheck: false });
      control.addEventListener('input', () => set(control.value === '' ? undefined : control.value));
    } else {
      // textarea, code, list (one item a line) and json.
      const text = !has ? '' : widget === 'list' && Array.isArray(current) ? current.join('\n')
        : widget === 'json' ? JSON.stringify(current, null, 2) : shown(current);
      control = el('textarea', { value: text, placeholder: fallback, spellcheck: false, rows: widget === 'code' ? 8 : 3 });
      control.addEventListener('input', () => {
        control.classList.remove('invalid');
        control.title = '';
        const value = control.value;
        if (value === '') return set(undefined);
        if (widget === 'list') {
          const items = value.split('\n');
          if (items[items.length - 1] === '') items.pop();
          return set(items);
        }
        if (widget === 'json') {
          try {
            return set(JSON.parse(value));
          } catch (error) {
            control.classList.add('invalid');
            control.title = 'not JSON: ' + error.message;
            return undefined;
          }
        }
        return set(value);
      });
    }
    control.id = idFor;
    control.name = port.name;
    control.dataset.widget = widget;
    if (widget === 'code') control.classList.add('code');
    const row = el('div', { className: 'field', dataset: { port: port.name, audience: port.audience, widget } },
      el('label', { htmlFor: idFor },
        el('span', { className: 'name', text: port.name + (port.required ? ' *' : '') }),
        el('small', { className: 'type', text: ' ' + port.type + (port.audience === 'capped' ? ' · capped by the author' : '') })),
      control);
    let help = port.description || '';
    if (Array.isArray(port.fields) && port.fields.length) {
      help += '\nFields: ' + port.fields.map((f) => f.name + ' (' + f.type + ')').join(', ');
    }
    if (widget === 'list') help += '\nOne item a line.';
    if (help) row.append(el('p', { className: 'description', text: help.trim() }));
    return row;
  }

  // ----- runs --------------------------------------------------------------------------------

  function setRunStatus(text, status) {
    const box = $('#run-status');
    box.textContent = text;
    box.dataset.status = status || '';
  }

  async function startRun() {
    const graph = exportGraph();
    if (!graph.nodes.length) {
      showMessage('Add a node first.');
      return;
    }
    $('#run').disabled = true;
    const res = await api('POST', '/api/runs', graph);
    if (res.status === 400 && res.data && res.data.ok === false) {
      $('#run').disabled = false;
      showCheck(res.data);
      return;
    }
    if (res.status !== 202 || !res.data || !res.data.run_id) {
      $('#run').disabled = false;
      showMessage('The run was not started: ' + apiError(res));
      return;
    }
    showMessage('');
    markErrors(null);
    follow(res.data.run_id);
    refreshHistory();
  }

  function stopFollowing() {
    if (state.run) state.run.source.close();
    state.run = null;
    $('#cancel').disabled = true;
    $('#run').disabled = false;
  }

  /** Follows run `runId`'s events (from its first: a finished run replays) on the canvas. */
  function follow(runId) {
    stopFollowing();
    $('#approvals').replaceChildren();
    for (const node of state.nodes.values()) {
      setStatus(node, 'queued');
      node.outputEl.replaceChildren();
    }
    const source = new EventSource('/api/runs/' + encodeURIComponent(runId) + '/events');
    const run = { id: runId, source };
    state.run = run;
    $('#run').disabled = true;
    $('#cancel').disabled = false;
    setRunStatus(runId + ': running', 'running');
    const on = (name, handle) => source.addEventListener(name, (event) => {
      if (state.run !== run) return;
      let data;
      try {
        data = JSON.parse(event.data);
      } catch (_) {
        return;
      }
      const node = data.node === undefined ? null : nodeById(data.node);
      handle(data, node);
    });
    on('node_started', (d, node) => node && setStatus(node, 'running'));
    on('approval_requested', (d, node) => {
      if (node) setStatus(node, 'waiting', 'waiting for approval');
      addApprovalCard(runId, d);
    });
    on('approval_decided', (d, node) => {
      const card = [...document.querySelectorAll('#approvals .approval-card')].find((c) => c.dataset.approvalId === d.approval_id);
      if (card) card.remove();
      if (node) setStatus(node, d.decision === 'approved' ? 'running' : 'denied', d.decision === 'approved' ? 'approved, running' : 'denied');
      noCardsHint();
    });
    on('output_chunk', (d, node) => node && appendOutput(node, d.text, d.stream));
    on('output_dropped', (d, node) => node && appendOutput(node, '\n[' + (d.message || 'output dropped') + ']\n', 'note'));
    on('events_dropped', (d) => showMessage(d.missed + ' earlier events of ' + runId + ' are no longer kept.', 'warning'));
    on('node_finished', (d, node) => {
      if (!node) return;
      const status = d.error_kind === DENIED ? 'denied' : d.status;
      setStatus(node, status, status + (d.reason ? ': ' + d.reason : ''));
    });
    on('graph_finished', (d) => {
      setRunStatus(runId + ': ' + d.status, d.status);
      source.close();
      $('#approvals').replaceChildren();
      noCardsHint();
      stopFollowing();
      refreshHistory();
      showRun(runId, true);
    });
    source.onerror = async () => {
      if (state.run !== run || source.readyState !== EventSource.CLOSED) return;
      // The stream is gone for good (the browser gave up reconnecting): show what the server knows.
      stopFollowing();
      setRunStatus(runId + ': lost the event stream', 'failed');
      showRun(runId, true);
    };
  }

  function appendOutput(node, text, stream) {
    const out = node.outputEl;
    out.append(el('span', { className: stream || 'stdout', text }));
    let excess = out.textContent.length - OUTPUT_KEPT;
    while (excess > 0 && out.firstChild) {
      excess -= out.firstChild.textContent.length;
      out.firstChild.remove();
    }
    out.scrollTop = out.scrollHeight;
  }

  function noCardsHint() {
    const box = $('#approvals');
    if (!box.querySelector('.approval-card')) box.replaceChildren(el('p', { className: 'hint', text: 'Nothing waiting.' }));
  }

  function addApprovalCard(runId, data) {
    const box = $('#approvals');
    box.querySelectorAll('.hint').forEach((h) => h.remove());
    const card = el('div', { className: 'approval-card', dataset: { approvalId: data.approval_id, nodeId: data.node, runId } },
      el('h3', { text: 'Approve ' + data.node + ' (' + data.type + ')?' }),
      el('pre', { className: 'card-text', text: data.card_text || '' }));
    const buttons = el('p', { className: 'buttons' });
    for (const [decision, label] of [['approve', 'Approve'], ['deny', 'Deny']]) {
      const button = el('button', { type: 'button', text: label, dataset: { decision } });
      button.addEventListener('click', () => answer(card, decision));
      buttons.append(button);
    }
    card.append(buttons);
    box.append(card);
  }

  async function answer(card, decision) {
    card.querySelectorAll('button').forEach((b) => { b.disabled = true; });
    const { runId, approvalId } = card.dataset;
    const res = await api('POST', '/api/runs/' + encodeURIComponent(runId) + '/approvals/' + encodeURIComponent(approvalId), { decision });
    if (res.ok || res.status === 409 || res.status === 404) {
      card.remove();
      noCardsHint();
      if (!res.ok) showMessage(apiError(res), 'warning');
    } else {
      card.querySelectorAll('button').forEach((b) => { b.disabled = false; });
      showMessage('The answer was not taken: ' + apiError(res));
    }
  }

  async function cancelRun() {
    if (!state.run) return;
    const id = state.run.id;
    $('#cancel').disabled = true;
    const res = await api('DELETE', '/api/runs/' + encodeURIComponent(id));
    if (!res.ok) {
      $('#cancel').disabled = false;
      showMessage('Could not cancel ' + id + ': ' + apiError(res));
    } else if (state.run && state.run.id === id) {
      // (Its `graph_finished` may have come first: then the run's status is already shown.)
      setRunStatus(id + ': cancelling', 'running');
    }
  }

  // ----- history -----------------------------------------------------------------------------

  async function refreshHistory() {
    const res = await api('GET', '/api/runs');
    const list = $('#history');
    if (!res.ok || !res.data || !Array.isArray(res.data.runs)) {
      list.replaceChildren(el('li', { className: 'hint', text: 'No history: ' + apiError(res) }));
      return;
    }
    list.replaceChildren();
    for (const r of res.data.runs) {
      const entry = el('button', { type: 'button', className: 'history-entry' },
        el('span', { className: 'run-id', text: r.run_id }), ' ',
        el('span', { className: 'badge ' + r.status, text: r.status }), ' ',
        el('small', { text: r.nodes + (r.nodes === 1 ? ' node · ' : ' nodes · ') + r.created }));
      entry.addEventListener('click', () => showRun(r.run_id));
      list.append(el('li', { dataset: { runId: r.run_id, status: r.status } }, entry));
    }
    if (!res.data.runs.length) list.append(el('li', { className: 'hint', text: 'No runs yet.' }));
  }

  /** Shows run `id`'s status and result under History (and, from its result, on the canvas). */
  async function showRun(id, onCanvas) {
    const res = await api('GET', '/api/runs/' + encodeURIComponent(id));
    if (!res.ok || !res.data) {
      showMessage('Run ' + id + ': ' + apiError(res));
      return;
    }
    const d = res.data;
    state.detail = d;
    const box = $('#run-detail');
    box.hidden = false;
    box.dataset.runId = d.run_id;
    box.dataset.status = d.status;
    $('#detail-title').textContent = d.run_id + ': ' + d.status + ' (' + d.created + ')';
    const lines = [];
    const nodes = (d.result && d.result.nodes) || {};
    for (const [nodeId, r] of Object.entries(nodes)) {
      const outputs = r.outputs || {};
      const status = outputs.error_kind === DENIED ? 'denied' : r.status;
      lines.push(nodeId + ': ' + status + (outputs.summary ? ' — ' + outputs.summary : r.reason ? ' — ' + r.reason : ''));
      const node = onCanvas && nodeById(nodeId);
      if (node) setStatus(node, status, status + (outputs.summary ? ': ' + outputs.summary : ''));
    }
    const pending = d.pending_approvals || [];
    if (!d.result) lines.push('still ' + d.status + (pending.length ? '; ' + pending.length + ' approval(s) waiting' : ''));
    if (d.result) lines.push('', JSON.stringify(d.result, null, 2));
    $('#detail-result').textContent = lines.join('\n');
  }

  // ----- wiring ------------------------------------------------------------------------------

  function start() {
    editor = new Drawflow($('#drawflow'));
    editor.reroute = false;
    editor.start();
    editor.on('nodeSelected', (id) => selectNode(state.nodes.get(String(id))));
    editor.on('nodeUnselected', () => showInspector(null));
    editor.on('nodeRemoved', (id) => {
      const node = state.nodes.get(String(id));
      state.nodes.delete(String(id));
      if (node && $('#inspector').dataset.nodeId === node.id) showInspector(null);
    });
    editor.on('connectionCreated', (c) => {
      if (!state.loading) checkConnection(c);
    });

    const area = $('#drawflow');
    // Drawflow announces a node only when its selection changes: a click on the node it still
    // holds selected (after another was added) must show that node too.
    area.addEventListener('click', (event) => {
      const box = event.target.closest('.drawflow-node');
      if (box) selectNode(state.nodes.get(box.id.slice('node-'.length)));
    });
    area.addEventListener('dragover', (event) => {
      event.preventDefault();
      event.dataTransfer.dropEffect = 'copy';
    });
    area.addEventListener('drop', (event) => {
      event.preventDefault();
      const type = event.dataTransfer.getData('application/x-cheng-node') || event.dataTransfer.getData('text/plain');
      if (!state.palette.has(type)) return;
      const at = toCanvas(event.clientX, event.clientY);
      selectNode(addNode(type, at.x, at.y));
    });

    $('#run').addEventListener('click', startRun);
    $('#cancel').addEventListener('click', cancelRun);
    $('#check').addEventListener('click', checkGraph);
    $('#save').addEventListener('click', saveGraph);
    $('#clear').addEventListener('click', () => {
      clearCanvas();
      showMessage('');
    });
    $('#load').addEventListener('change', async (event) => {
      const file = event.target.files[0];
      if (file) readGraph(await file.text(), file.name);
      event.target.value = '';
    });
    const dialog = $('#json-dialog');
    $('#show-json').addEventListener('click', () => {
      $('#graph-json').value = JSON.stringify(exportGraph(), null, 2);
      dialog.showModal();
    });
    $('#apply-json').addEventListener('click', () => {
      if (readGraph($('#graph-json').value, 'The text')) dialog.close();
    });
    $('#close-json').addEventListener('click', () => dialog.close());
    $('#message').addEventListener('click', () => showMessage(''));
    $('#refresh-history').addEventListener('click', refreshHistory);
    $('#open-run').addEventListener('click', () => {
      const d = state.detail;
      if (d && loadGraph(d.graph)) follow(d.run_id);
    });

    loadPalette().then(() => {
      document.body.dataset.ready = 'true';
    });
    refreshHistory();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
