// syncprof's contention viewer: draws the view model that syncprof's Rust
// code computes (src/viewer/model.rs): the top table as DOM rows, the merged
// stack tree as a flame graph on a 2D canvas. It computes no profile itself:
// a label filter picks label sets, whose precomputed values it sums, exactly
// as View::top does for the command line. Loads nothing but the endpoint's
// own routes (live) or nothing at all (the HTML file).
"use strict";
(function () {
  const t0 = performance.now();
  const $ = (id) => document.getElementById(id);
  const IDLE = "kind=condvar,chan_recv,notify,async_chan_recv,barrier,async_barrier,select,waitgroup,park";
  const ROW = 18;
  const embedded = $("syncprof-data");
  const mode = embedded ? "file" : "live";
  const state = {
    profiles: [], // live: names; file: views
    current: 0,
    view: null,
    windowSeconds: 0,
    compare: "",
    internal: false,
    value: null,
    by: "function",
    sort: null,
    focus: "",
    ignore: "",
    hideIdle: false,
    search: "",
    zoomPath: [],
    note: "",
    pins: [],
  };
  let file = null;
  let prepared = null; // per-view derived arrays
  let rects = null; // the flame graph's drawn frames, for hit tests
  let timer = null;
  let renders = 0;
  // What the page did, for people and for the browser test: render times,
  // errors, blocked loads, and the names of the frames drawn.
  window.syncprof = {
    mode: mode, ready: false, firstRenderMs: null, renders: 0, errors: [], violations: [],
    drawn: () => (rects ? rects.ns.map((node) => nameOf(rects.view, node)[1]) : []),
  };
  document.addEventListener("securitypolicyviolation", (e) => {
    window.syncprof.violations.push(e.blockedURI + " (" + e.violatedDirective + ")");
    fail("blocked a load outside the page's policy: " + e.blockedURI);
  });

  function fail(message) {
    const status = $("status");
    status.textContent = message;
    status.className = "error";
    window.syncprof.errors.push(message);
    console.error("syncprof viewer: " + message);
  }

  // ---- formatting -------------------------------------------------------
  function unitOf(view, v) { return view.sample_types[v][1]; }
  function fmt(value, unit) {
    if (unit === "nanoseconds") {
      const a = Math.abs(value);
      if (a >= 1e9) return trim(value / 1e9) + "s";
      if (a >= 1e6) return trim(value / 1e6) + "ms";
      if (a >= 1e3) return trim(value / 1e3) + "\u00b5s";
      return value + "ns";
    }
    return Math.round(value).toLocaleString("en-US");
  }
  function trim(x) { return x.toFixed(2).replace(/\.?0+$/, ""); }
  function pct(part, total) { return total ? (100 * part / total).toFixed(2) + "%" : "-"; }
  function signed(value, unit) { return (value > 0 ? "+" : "") + fmt(value, unit); }
  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }

  // ---- label filters: the semantics of Filter in src/viewer/model.rs ----
  function parseTerms(text) {
    return text.split(";").map((s) => s.trim()).filter((s) => s.length > 0).map((expr) => {
      const eq = expr.indexOf("=");
      const key = eq >= 0 ? expr.slice(0, eq).trim() : null;
      const patterns = (eq >= 0 ? expr.slice(eq + 1) : expr).split(",").map((p) => p.trim());
      return { key: key, patterns: patterns };
    });
  }
  function patternMatches(pattern, value) {
    let start = false, end = false;
    if (pattern.startsWith("^")) { start = true; pattern = pattern.slice(1); }
    if (pattern.endsWith("$")) { end = true; pattern = pattern.slice(0, -1); }
    if (start && end) return value === pattern;
    if (start) return value.startsWith(pattern);
    if (end) return value.endsWith(pattern);
    return value.includes(pattern);
  }
  function termMatches(term, labels) {
    if (term.key !== null) {
      return labels.some(([k, v]) => k === term.key && term.patterns.some((p) => patternMatches(p, v)));
    }
    return term.patterns.every((p) => labels.some(([k, v]) => patternMatches(p, k + ":" + v)));
  }
  function keptLabelsets(view) {
    const focus = parseTerms(state.focus);
    const ignore = parseTerms(state.ignore + (state.hideIdle ? ";" + IDLE : ""));
    const bad = focus.concat(ignore).find((t) => t.key === "" || t.patterns.some((p) => p === ""));
    $("focus").classList.toggle("bad", !!bad);
    return view.labelsets.map((ls) =>
      focus.every((t) => termMatches(t, ls.labels)) && !ignore.some((t) => termMatches(t, ls.labels)));
  }

  // ---- the model ----------------------------------------------------------
  function prepare(view) {
    const n = view.tree.function.length;
    // Preorder: children follow their parent; collect them in order.
    const childStart = new Int32Array(n + 1);
    for (let i = 1; i < n; i++) childStart[view.tree.parent[i] + 1]++;
    for (let i = 0; i < n; i++) childStart[i + 1] += childStart[i];
    const children = new Int32Array(Math.max(0, n - 1));
    const fill = childStart.slice(0, n);
    for (let i = 1; i < n; i++) children[fill[view.tree.parent[i]]++] = i;
    return { childStart: childStart, children: children, n: n };
  }

  // Values of every node for value column v, per side, over kept label sets.
  function nodeValues(view, kept, v) {
    const n = view.tree.function.length, nv = view.sample_types.length;
    const sides = [new Float64Array(n), new Float64Array(n)];
    const t = view.tree, sideOf = view.labelsets.map((ls) => ls.side);
    for (let i = 0; i < n; i++) {
      for (let e = t.start[i]; e < t.start[i + 1]; e++) {
        const ls = t.labelset[e];
        if (kept[ls]) sides[sideOf[ls]][i] += t.values[e * nv + v];
      }
    }
    return sides;
  }

  function topRows(view, kept) {
    const nv = view.sample_types.length;
    const sideOf = view.labelsets.map((ls) => ls.side);
    const rows = [];
    const blank = (name, full, file) => ({ name: name, full: full, file: file,
      flat: [new Float64Array(nv), new Float64Array(nv)], cum: [new Float64Array(nv), new Float64Array(nv)] });
    if (state.by === "function") {
      const top = view.top;
      for (let f = 0; f < view.functions.length; f++) {
        let row = null;
        for (let e = top.start[f]; e < top.start[f + 1]; e++) {
          const ls = top.labelset[e];
          if (!kept[ls]) continue;
          if (!row) row = blank(view.functions[f][0], view.functions[f][1], view.functions[f][2]);
          const s = sideOf[ls];
          for (let v = 0; v < nv; v++) {
            row.flat[s][v] += top.values[e * 2 * nv + v];
            row.cum[s][v] += top.values[e * 2 * nv + nv + v];
          }
        }
        if (row) rows.push(row);
      }
    } else {
      const byValue = new Map();
      const t = view.tree;
      for (let e = t.start[0]; e < t.start[1]; e++) {
        const ls = t.labelset[e];
        if (!kept[ls]) continue;
        const found = view.labelsets[ls].labels.find(([k]) => k === state.by);
        const value = found ? found[1] : "(none)";
        if (!byValue.has(value)) byValue.set(value, blank(value, value, ""));
        const row = byValue.get(value), s = sideOf[ls];
        for (let v = 0; v < nv; v++) {
          row.flat[s][v] += t.values[e * nv + v];
          row.cum[s][v] += t.values[e * nv + v];
        }
      }
      rows.push(...byValue.values());
    }
    return rows;
  }

  // ---- the top table ----------------------------------------------------
  function columns(view) {
    const v = state.value, unit = unitOf(view, v), name = view.sample_types[v][0];
    const cols = [];
    if (view.diff) {
      cols.push({ id: "bflat", title: "base flat", get: (r) => r.flat[1][v], unit: unit });
      cols.push({ id: "flat", title: "new flat", get: (r) => r.flat[0][v], unit: unit });
      cols.push({ id: "dflat", title: "\u0394 flat", get: (r) => r.flat[0][v] - r.flat[1][v], unit: unit, delta: true });
      if (state.by === "function") {
        cols.push({ id: "bcum", title: "base cum", get: (r) => r.cum[1][v], unit: unit });
        cols.push({ id: "cum", title: "new cum", get: (r) => r.cum[0][v], unit: unit });
        cols.push({ id: "dcum", title: "\u0394 cum", get: (r) => r.cum[0][v] - r.cum[1][v], unit: unit, delta: true });
      }
      return cols;
    }
    const short = (t) => (t === "contentions" ? "count" : t);
    cols.push({ id: "flat", title: "flat " + short(name), get: (r) => r.flat[0][v], unit: unit });
    cols.push({ id: "flatpct", title: "flat%", get: (r) => r.flat[0][v], pct: true });
    if (state.by === "function") {
      cols.push({ id: "cum", title: "cum " + short(name), get: (r) => r.cum[0][v], unit: unit });
      cols.push({ id: "cumpct", title: "cum%", get: (r) => r.cum[0][v], pct: true });
    }
    view.sample_types.forEach(([tname, tunit], other) => {
      if (other === v) return;
      cols.push({ id: "flat" + other, title: "flat " + short(tname), get: (r) => r.flat[0][other], unit: tunit });
      if (state.by === "function") cols.push({ id: "cum" + other, title: "cum " + short(tname), get: (r) => r.cum[0][other], unit: tunit });
    });
    return cols;
  }

  function renderTop(view, kept, totals) {
    const rows = topRows(view, kept);
    const cols = columns(view);
    if (!state.sort || !cols.concat([{ id: "name" }]).some((c) => c.id === state.sort.id)) {
      state.sort = { id: view.diff ? "dflat" : "flat", desc: true };
    }
    const col = cols.find((c) => c.id === state.sort.id);
    const key = col ? (col.delta ? (r) => col.get(r) : col.get) : null;
    rows.sort((a, b) => {
      let d = key ? key(a) - key(b) : a.name.localeCompare(b.name);
      if (d === 0 && key) d = (a.cum[0][state.value] - b.cum[0][state.value]);
      if (d === 0) d = b.name.localeCompare(a.name);
      return state.sort.desc ? -d : d;
    });
    const table = $("top"), head = table.tHead, body = table.tBodies[0];
    head.textContent = "";
    const hr = head.insertRow();
    const total = totals[0];
    for (const c of cols.concat([{ id: "name", title: state.by === "function" ? "function" : state.by, name: true }])) {
      const th = el("th", c.title, c.name ? "name" : "");
      th.dataset.col = c.id;
      if (state.sort.id === c.id) th.classList.add("sorted", ...(state.sort.desc ? [] : ["asc"]));
      th.addEventListener("click", () => {
        state.sort = { id: c.id, desc: state.sort.id === c.id ? !state.sort.desc : c.id !== "name" };
        render();
      });
      hr.appendChild(th);
    }
    const limit = 1000;
    const frag = document.createDocumentFragment();
    for (const r of rows.slice(0, limit)) {
      const tr = document.createElement("tr");
      for (const c of cols) {
        const value = c.get(r);
        let cls = "";
        if (c.delta) cls = value > 0 ? "up" : value < 0 ? "down" : "";
        tr.appendChild(el("td", c.pct ? pct(value, total) : c.delta ? signed(value, c.unit) : fmt(value, c.unit), cls));
      }
      const name = el("td", r.name, "name");
      name.title = r.full + (r.file ? "\n" + r.file : "");
      tr.appendChild(name);
      tr.dataset.name = r.full;
      tr.addEventListener("click", () => {
        if (state.by === "function") {
          state.search = r.name;
          $("search").value = r.name;
        } else {
          state.focus = addTerm(state.focus, state.by + "=^" + r.name + "$");
          $("focus").value = state.focus;
        }
        render();
      });
      frag.appendChild(tr);
    }
    body.textContent = "";
    body.appendChild(frag);
    if (rows.length > limit) {
      const tr = body.insertRow();
      const td = el("td", (rows.length - limit) + " more rows not shown: focus or search to narrow", "empty");
      td.colSpan = cols.length + 1;
      tr.appendChild(td);
    }
    if (rows.length === 0) {
      const tr = body.insertRow();
      const td = el("td", "no samples" + (state.focus || state.ignore || state.hideIdle ? " kept by the filters" : " in this window"), "empty");
      td.colSpan = cols.length + 1;
      tr.appendChild(td);
    }
  }

  function addTerm(list, term) {
    const terms = list.split(";").map((s) => s.trim()).filter((s) => s && s !== term);
    terms.push(term);
    return terms.join("; ");
  }

  // ---- the flame graph --------------------------------------------------
  function hue(name) {
    let h = 0;
    for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) | 0;
    return h;
  }
  function colour(view, node, vals, matched) {
    if (view.diff) {
      const a = vals[0][node], b = vals[1][node], m = Math.max(a, b);
      const r = m > 0 ? (a - b) / m : 0;
      if (Math.abs(r) < 0.02) return "rgb(220,220,220)";
      const k = Math.round(200 - 150 * Math.min(1, Math.abs(r)));
      return r > 0 ? "rgb(255," + k + "," + k + ")" : "rgb(" + k + "," + (k + 40 > 255 ? 255 : k + 40) + ",255)";
    }
    const f = view.tree.function[node];
    const h = f < 0 ? 0 : hue(view.functions[f][1]);
    const base = "hsl(" + (15 + (Math.abs(h) % 35)) + "," + (65 + (Math.abs(h >> 8) % 25)) + "%," + (55 + (Math.abs(h >> 16) % 15)) + "%)";
    if (state.search && !matched) return "hsl(30,8%,82%)";
    return base;
  }

  function findZoom(view) {
    // The zoom is kept as a path of function names, so that it survives a
    // refresh of the data.
    let node = 0;
    for (const name of state.zoomPath) {
      let next = -1;
      for (let c = prepared.childStart[node]; c < prepared.childStart[node + 1]; c++) {
        const child = prepared.children[c];
        if (view.functions[view.tree.function[child]][1] === name) { next = child; break; }
      }
      if (next < 0) break;
      node = next;
    }
    return node;
  }
  function pathOf(view, node) {
    const path = [];
    while (node > 0) { path.push(view.functions[view.tree.function[node]][1]); node = view.tree.parent[node]; }
    return path.reverse();
  }
  function nameOf(view, node) {
    return node === 0 ? ["all", "all"] : view.functions[view.tree.function[node]];
  }

  function renderFlame(view, vals) {
    const canvas = $("flame");
    const width = Math.max(200, canvas.parentElement.clientWidth - 2);
    const w = new Float64Array(vals[0].length);
    for (let i = 0; i < w.length; i++) w[i] = Math.max(0, vals[0][i]) + (view.diff ? Math.max(0, vals[1][i]) : 0);
    const zoom = findZoom(view);
    const search = state.search.toLowerCase();
    const isMatch = (node) => {
      if (!search || node === 0) return false;
      const f = view.functions[view.tree.function[node]];
      return f[0].toLowerCase().includes(search) || f[1].toLowerCase().includes(search);
    };
    // Layout: the zoomed node's ancestors full width, then its subtree.
    const xs = [], ys = [], ws = [], ns = [], ms = [];
    const ancestors = [];
    for (let a = zoom; a > 0; a = view.tree.parent[a]) ancestors.push(a);
    ancestors.push(0);
    ancestors.reverse();
    let depth = 0;
    for (const a of ancestors.slice(0, -1)) {
      xs.push(0); ys.push(depth); ws.push(width); ns.push(a); ms.push(isMatch(a)); depth++;
    }
    const scale = w[zoom] > 0 ? width / w[zoom] : 0;
    let matchedTotal = 0;
    // Iterative walk: (node, x, depth, under a match).
    const stack = [[zoom, 0, depth, false]];
    let maxDepth = depth;
    while (stack.length) {
      const [node, x, d, under] = stack.pop();
      const px = w[node] * scale;
      if (px < 1) continue; // narrower than a pixel: skip it and its subtree
      const m = isMatch(node);
      if (m && !under) matchedTotal += vals[0][node];
      xs.push(x); ys.push(d); ws.push(px); ns.push(node); ms.push(m);
      if (d > maxDepth) maxDepth = d;
      let cx = x;
      const kids = [];
      for (let c = prepared.childStart[node]; c < prepared.childStart[node + 1]; c++) {
        const child = prepared.children[c];
        kids.push([child, cx, d + 1, under || m]);
        cx += w[child] * scale;
      }
      for (let k = kids.length - 1; k >= 0; k--) stack.push(kids[k]);
    }
    const dpr = window.devicePixelRatio || 1;
    const height = (maxDepth + 1) * ROW + 2;
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    canvas.style.height = height + "px";
    const ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    ctx.font = "11px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace";
    ctx.textBaseline = "middle";
    const charWidth = ctx.measureText("m").width || 7;
    for (let i = 0; i < xs.length; i++) {
      const node = ns[i], x = xs[i], y = ys[i] * ROW, px = ws[i];
      ctx.fillStyle = ms[i] ? "#a78bfa" : colour(view, node, vals, ms[i] || !search);
      ctx.fillRect(x, y, Math.max(1, px - 0.5), ROW - 1);
      if (px > 3 * charWidth) {
        const name = nameOf(view, node)[0];
        const fit = Math.floor((px - 6) / charWidth);
        ctx.fillStyle = "#111";
        ctx.fillText(name.length > fit ? name.slice(0, Math.max(1, fit - 1)) + "\u2026" : name, x + 3, y + ROW / 2);
      }
    }
    rects = { xs: xs, ys: ys, ws: ws, ns: ns, w: w, vals: vals, view: view };
    const total = vals[0][0];
    $("matched").textContent = search ? "matched " + fmt(matchedTotal, unitOf(view, state.value)) + " (" + pct(matchedTotal, total) + ")" : "";
    canvas.dataset.frames = String(xs.length);
    const crumbs = $("crumbs");
    crumbs.textContent = "";
    if (zoom > 0) {
      for (const a of ancestors) {
        const link = el("a", nameOf(view, a)[0]);
        link.addEventListener("click", () => { state.zoomPath = pathOf(view, a); render(); });
        crumbs.appendChild(link);
        crumbs.appendChild(document.createTextNode(" \u203a "));
      }
    } else {
      crumbs.textContent = "click a frame to zoom; hover for the full name";
    }
  }

  function frameAt(event) {
    if (!rects) return -1;
    const box = $("flame").getBoundingClientRect();
    const x = event.clientX - box.left, row = Math.floor((event.clientY - box.top) / ROW);
    for (let i = rects.xs.length - 1; i >= 0; i--) {
      if (rects.ys[i] === row && x >= rects.xs[i] && x < rects.xs[i] + rects.ws[i]) return i;
    }
    return -1;
  }

  function setupFlameEvents() {
    const canvas = $("flame"), tip = $("tooltip");
    canvas.addEventListener("mousemove", (event) => {
      const i = frameAt(event);
      if (i < 0) { tip.hidden = true; return; }
      const view = rects.view, node = rects.ns[i], [, full, fileName] = nameOf(view, node);
      const unit = unitOf(view, state.value), vals = rects.vals, root = vals[0][0];
      let text = full + (fileName ? "\n" + fileName : "") + "\n";
      if (view.diff) {
        text += "base " + fmt(vals[1][node], unit) + ", new " + fmt(vals[0][node], unit) + " (" + signed(vals[0][node] - vals[1][node], unit) + ")";
      } else {
        text += fmt(vals[0][node], unit) + " (" + pct(vals[0][node], root) + " of the total)";
      }
      tip.textContent = text;
      tip.style.whiteSpace = "pre-wrap";
      tip.hidden = false;
      const box = canvas.parentElement.getBoundingClientRect();
      tip.style.left = Math.min(event.clientX - box.left + 12, box.width - 300) + "px";
      tip.style.top = (event.clientY - box.top + canvas.parentElement.scrollTop + 14) + "px";
    });
    canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
    canvas.addEventListener("click", (event) => {
      const i = frameAt(event);
      if (i < 0) return;
      state.zoomPath = pathOf(rects.view, rects.ns[i]);
      render();
    });
  }

  // ---- label chips ------------------------------------------------------
  function renderChips(view) {
    const box = $("labels");
    box.textContent = "";
    const seen = new Map();
    for (const ls of view.labelsets) {
      for (const [k, v] of ls.labels) {
        if (k === "thread" || k === "holder") continue;
        const key = k + "=" + v;
        if (!seen.has(key)) seen.set(key, [k, v]);
      }
    }
    const all = [...seen.values()].sort((a, b) => (a[0] + a[1]).localeCompare(b[0] + b[1])).slice(0, 200);
    for (const [k, v] of all) {
      const term = k + "=^" + v + "$";
      const chip = el("span", k + "=" + v, "chip");
      chip.title = "click: focus on it (-tagfocus); alt- or shift-click: ignore it (-tagignore)";
      if (state.focus.split(";").map((s) => s.trim()).includes(term)) chip.classList.add("focused");
      if (state.ignore.split(";").map((s) => s.trim()).includes(term)) chip.classList.add("ignored");
      chip.addEventListener("click", (event) => {
        const which = event.altKey || event.shiftKey ? "ignore" : "focus";
        const terms = state[which].split(";").map((s) => s.trim()).filter((s) => s);
        state[which] = terms.includes(term) ? terms.filter((s) => s !== term).join("; ") : addTerm(state[which], term);
        $(which).value = state[which];
        render();
      });
      box.appendChild(chip);
    }
  }

  // ---- the whole page -----------------------------------------------------
  function render() {
    const view = state.view;
    if (!view) return;
    const start = performance.now();
    if (state.value === null || state.value >= view.sample_types.length) state.value = view.default_value;
    const select = $("value");
    if (select.options.length !== view.sample_types.length) {
      select.textContent = "";
      view.sample_types.forEach(([name, unit], i) => select.appendChild(new Option(name + " (" + unit + ")", String(i))));
    }
    select.value = String(state.value);
    const kept = keptLabelsets(view);
    const vals = nodeValues(view, kept, state.value);
    const totals = [vals[0][0], vals[1][0]];
    renderChips(view);
    renderTop(view, kept, totals);
    renderFlame(view, vals);
    const unit = unitOf(view, state.value);
    let summary = view.title + ": " + fmt(totals[0], unit) + " " + view.sample_types[state.value][0];
    if (view.diff) summary += " against a base of " + fmt(totals[1], unit) + " (" + signed(totals[0] - totals[1], unit) + ")";
    if (view.duration_nanos > 0) summary += " over " + fmt(view.duration_nanos, "nanoseconds");
    if (state.note) summary += " \u00b7 " + state.note;
    $("summary").textContent = summary;
    const now = performance.now();
    renders++;
    window.syncprof.renders = renders;
    window.syncprof.rendered = { focus: state.focus, ignore: state.ignore, search: state.search };
    window.syncprof.renderMs = now - start;
    if (window.syncprof.firstRenderMs === null) {
      window.syncprof.firstRenderMs = now - t0;
      window.syncprof.sinceNavigationMs = now;
      performance.mark("syncprof-first-render");
    }
    window.syncprof.ready = true;
    document.body.dataset.ready = "1";
  }

  function setView(view) {
    const same = state.view && prepared && state.view.tree.function.length === view.tree.function.length;
    state.view = view;
    prepared = prepare(view);
    if (!same) { /* keep the zoom path; findZoom falls back to the deepest match */ }
    render();
  }

  function renderTabs() {
    const nav = $("profiles");
    nav.textContent = "";
    state.profiles.forEach((p, i) => {
      const name = typeof p === "string" ? p : p.title;
      const b = el("button", name);
      b.type = "button";
      b.dataset.profile = name;
      if (i === state.current) b.className = "active";
      b.addEventListener("click", () => {
        state.current = i;
        state.zoomPath = [];
        state.sort = null;
        renderTabs();
        load();
      });
      nav.appendChild(b);
    });
  }

  // ---- data: embedded (file) or fetched (live) ---------------------------
  function dataUrl() {
    const q = new URLSearchParams();
    q.set("profile", state.profiles[state.current]);
    if (state.windowSeconds > 0) q.set("seconds", String(state.windowSeconds));
    if (state.compare) q.set("compare", state.compare);
    if (state.internal) q.set("internal", "1");
    return "/debug/pprof/ui/data?" + q.toString();
  }

  async function fetchJson(url, options) {
    const response = await fetch(url, options);
    const text = await response.text();
    if (!response.ok) throw new Error(url + ": " + response.status + " " + text.trim());
    return JSON.parse(text);
  }

  async function load() {
    if (mode === "file") {
      setView(state.profiles[state.current]);
      return;
    }
    try {
      const data = await fetchJson(dataUrl());
      state.note = data.note || "";
      state.pins = data.pins || [];
      renderPins();
      $("status").className = "";
      $("status").textContent = "updated " + new Date().toLocaleTimeString();
      setView(data.view);
    } catch (e) {
      fail(String(e.message || e));
    }
  }

  function renderPins() {
    const select = $("compare");
    const wanted = ["", "previous"].concat(state.pins.map((p) => "pin:" + p.id));
    const have = [...select.options].map((o) => o.value);
    if (wanted.join() === have.join()) return;
    for (const p of state.pins) {
      if (!have.includes("pin:" + p.id)) select.appendChild(new Option("before/after pin " + p.id, "pin:" + p.id));
    }
    for (const o of [...select.options]) if (!wanted.includes(o.value)) o.remove();
    select.value = state.compare;
  }

  async function loadWaiting() {
    const body = $("waiting").tBodies[0];
    let data = null;
    if (mode === "file") {
      data = file.waiting;
      if (!data) { $("waiting-pane").hidden = true; return; }
    } else {
      try { data = await fetchJson("/debug/pprof/ui/waiting"); } catch (e) { fail(String(e.message || e)); return; }
    }
    body.textContent = "";
    for (const w of data.waiters) {
      const tr = body.insertRow();
      tr.appendChild(el("td", w.thread || "?"));
      tr.appendChild(el("td", fmt(w.waited_nanos, "nanoseconds"), "num"));
      tr.appendChild(el("td", w.kind));
      tr.appendChild(el("td", w.lock));
      tr.appendChild(el("td", w.holder || (w.kind ? "unknown" : "")));
      const user = w.stack.filter((f) => !/^<?(syncprof|lock_api|parking_lot|core::ptr::drop_in_place|core::mem::drop|tokio::loom::std::parking_lot)/.test(f[1]));
      const where = el("td", (user.length ? user : w.stack).slice(0, 3).map((f) => f[0]).join(" \u2039 "));
      where.title = w.stack.map((f) => f[1] + (f[2] ? "  " + f[2] : "")).join("\n");
      tr.appendChild(where);
    }
    if (data.waiters.length === 0) {
      const td = el("td", "no thread is waiting in a syncprof primitive" + (mode === "live" ? " right now" : ""), "empty");
      td.colSpan = 6;
      body.insertRow().appendChild(td);
    }
  }

  async function loadDeadlocks() {
    const pre = $("deadlocks");
    try {
      const response = await fetch("/debug/pprof/deadlocks");
      const text = await response.text();
      pre.textContent = response.status === 404 ? text.trim() : text.trim() || "no deadlock";
    } catch (e) {
      fail(String(e.message || e));
    }
  }

  function tick() {
    load();
    loadWaiting();
    loadDeadlocks();
  }

  function schedule() {
    if (timer) clearInterval(timer);
    timer = $("live").checked && mode === "live" ? setInterval(tick, 2000) : null;
  }

  function setupControls() {
    const debounce = (f) => { let t = null; return () => { clearTimeout(t); t = setTimeout(f, 150); }; };
    $("value").addEventListener("change", () => { state.value = Number($("value").value); state.sort = null; render(); });
    $("by").addEventListener("change", () => { state.by = $("by").value; state.sort = null; render(); });
    $("focus").addEventListener("input", debounce(() => { state.focus = $("focus").value; render(); }));
    $("ignore").addEventListener("input", debounce(() => { state.ignore = $("ignore").value; render(); }));
    $("hide-idle").addEventListener("change", () => { state.hideIdle = $("hide-idle").checked; render(); });
    $("search").addEventListener("input", debounce(() => { state.search = $("search").value; render(); }));
    $("reset-zoom").addEventListener("click", () => { state.zoomPath = []; render(); });
    $("window").addEventListener("change", () => { state.windowSeconds = Number($("window").value); load(); });
    $("compare").addEventListener("change", () => { state.compare = $("compare").value; state.sort = null; load(); });
    $("internal").addEventListener("change", () => { state.internal = $("internal").checked; load(); });
    $("live").addEventListener("change", schedule);
    $("pin").addEventListener("click", async () => {
      try {
        const pin = await fetchJson("/debug/pprof/ui/pin", { method: "POST" });
        state.pins.push(pin);
        renderPins();
        $("status").textContent = "pinned baseline " + pin.id + ": compare shows what came after it against what came before";
      } catch (e) { fail(String(e.message || e)); }
    });
    let resize = null;
    window.addEventListener("resize", () => { clearTimeout(resize); resize = setTimeout(render, 100); });
    setupFlameEvents();
  }

  window.addEventListener("error", (e) => fail("script error: " + e.message));
  window.addEventListener("unhandledrejection", (e) => fail("script error: " + e.reason));

  function start() {
    document.body.classList.add(mode);
    setupControls();
    if (mode === "file") {
      try {
        file = JSON.parse(embedded.textContent);
      } catch (e) {
        fail("the embedded profile data is not valid JSON: " + e.message);
        return;
      }
      state.profiles = file.profiles;
      $("status").textContent = file.title;
      if (state.profiles.length === 0) {
        $("panes").hidden = true;
        $("controls").hidden = true;
        window.syncprof.ready = true;
        window.syncprof.firstRenderMs = performance.now() - t0;
        document.body.dataset.ready = "1";
      }
      renderTabs();
      if (state.profiles.length) load();
      loadWaiting();
      return;
    }
    const wanted = new URLSearchParams(location.search).get("profile");
    state.profiles = ["mutex", "block"];
    state.current = wanted === "block" ? 1 : 0;
    renderTabs();
    tick();
    schedule();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
