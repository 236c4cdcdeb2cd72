// offload-prof's HTML report: draws each run's timeline from the JSON in #timeline-data (profiler/outputs/html/timeline.py).
//
// A large run's first picture comes from each lane's overview (one busy byte per slice of the wall time), whatever
// its size; its packed per-operation columns are decoded only when the reader zooms in past the overview's
// resolution or points at an operation. A run of at most `exact` operations is drawn from them at once. Each container says what it drew in data- attributes (data-mode,
// data-busy-px, data-view), and the page sets data-timeline="drawn" on <html> once every timeline is on screen.
(function () {
  "use strict";
  var LANE_H = 26, TOP = 14, AXIS = 20, FONT = "12px system-ui, sans-serif";
  var COLORS = { h2d: "#2f6fdf", d2h: "#d9572b", launch: "#2e9d55", sync: "#8a4fc9" };
  var ONE = { h2d: "H2D copy", d2h: "D2H copy", launch: "kernel", sync: "sync" };
  var TYPES = { u1: Uint8Array, u2: Uint16Array, u4: Uint32Array, f8: Float64Array };
  var source = document.getElementById("timeline-data");
  if (!source) return;
  var runs = JSON.parse(source.textContent);

  function decode(b64, Type) {
    var bin = atob(b64), n = bin.length, bytes = new Uint8Array(n);
    for (var i = 0; i < n; i++) bytes[i] = bin.charCodeAt(i);
    return new Type(bytes.buffer); // little-endian columns, as every browser's typed arrays are
  }

  function fmtNs(ns) {
    var a = Math.abs(ns);
    if (a < 1e3) return ns.toFixed(0) + " ns";
    if (a < 1e6) return (ns / 1e3).toFixed(a < 1e4 ? 2 : 1) + " \u00b5s";
    if (a < 1e9) return (ns / 1e6).toFixed(a < 1e7 ? 2 : 1) + " ms";
    return (ns / 1e9).toFixed(2) + " s";
  }

  function fmtBytes(n) {
    var units = ["B", "kB", "MB", "GB", "TB"], i = 0;
    while (n >= 1000 && i < units.length - 1) { n /= 1000; i++; }
    return (i ? n.toFixed(n < 10 ? 2 : 1) : n.toFixed(0)) + " " + units[i];
  }

  function lowerBound(arr, value) {
    var lo = 0, hi = arr.length;
    while (lo < hi) { var mid = (lo + hi) >>> 1; if (arr[mid] < value) lo = mid + 1; else hi = mid; }
    return lo;
  }

  function overview(lane) {
    if (!lane._busy) { lane._busy = decode(lane.busy, Uint8Array); lane._starts = decode(lane.starts, Uint32Array); }
    return lane;
  }

  function events(lane) {
    if (!lane._start) {
      lane._start = decode(lane.start, Uint32Array);
      lane._duration = decode(lane.duration, Uint32Array);
      lane._site = decode(lane.site, TYPES[lane.siteType]);
      lane._nbytes = lane.nbytes ? decode(lane.nbytes, TYPES[lane.nbytesType]) : null;
    }
    return lane;
  }

  // busy share (0..1) of each pixel column of [t0, t1), from the overview's slices
  function fromOverview(run, lane, t0, t1, width) {
    var busy = overview(lane)._busy, bin = run.wall / run.bins, out = new Float64Array(width), px = (t1 - t0) / width;
    for (var x = 0; x < width; x++) {
      var a = (t0 + x * px) / bin, b = (t0 + (x + 1) * px) / bin, k0 = Math.floor(a), k1 = Math.min(Math.ceil(b), run.bins);
      var sum = 0, weight = 0;
      for (var k = k0; k < k1; k++) {
        var w = Math.min(b, k + 1) - Math.max(a, k);
        if (w > 0) { sum += w * busy[k]; weight += w; }
      }
      out[x] = weight ? sum / weight / 255 : 0;
      if (out[x] === 0) for (k = k0; k < k1; k++) if (busy[k]) { out[x] = 1e-6; break; }
    }
    return out;
  }

  // busy share of each pixel column of [t0, t1), from the operations themselves
  function fromEvents(run, lane, t0, t1, width) {
    var ev = events(lane), start = ev._start, dur = ev._duration, n = start.length, out = new Float64Array(width);
    var a = t0 / run.tick, b = t1 / run.tick, pxPerTick = width / (b - a);
    for (var i = lowerBound(start, Math.max(0, a - lane.longest)); i < n && start[i] <= b; i++) {
      var s = start[i], e = s + dur[i];
      if (e < a) continue;
      var xs = (Math.max(s, a) - a) * pxPerTick, xe = (Math.min(e, b) - a) * pxPerTick;
      var x = Math.min(width - 1, Math.floor(xs));
      if (xe - xs < 1e-6) { out[x] = Math.max(out[x], 1e-6); continue; }
      for (; x < xe && x < width; x++) out[x] += Math.min(xe, x + 1) - Math.max(xs, x);
    }
    for (var j = 0; j < width; j++) if (out[j] > 1) out[j] = 1;
    return out;
  }

  function niceStep(raw) {
    var p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
  }

  function Timeline(box, run) {
    this.box = box; this.run = run; this.view = [0, run.wall];
    this.canvas = box.querySelector("canvas"); this.tip = box.querySelector(".tip");
    this.ctx = this.canvas.getContext("2d");
    var self = this;
    this.canvas.addEventListener("wheel", function (e) { e.preventDefault(); self.onWheel(e); }, { passive: false });
    this.canvas.addEventListener("mousedown", function (e) { self.drag = { x: e.clientX, view: self.view.slice() }; });
    window.addEventListener("mouseup", function () { self.drag = null; });
    this.canvas.addEventListener("mousemove", function (e) { self.onMove(e); });
    this.canvas.addEventListener("mouseleave", function () { self.tip.style.display = "none"; });
    this.canvas.addEventListener("dblclick", function () { self.zoom(0, run.wall); });
    var reset = box.querySelector("button.reset");
    if (reset) reset.addEventListener("click", function () { self.zoom(0, run.wall); });
  }

  // the lanes' labels, with their counts, set the plot's left edge
  Timeline.prototype.labelWidth = function () {
    if (!this._labelW) {
      var ctx = this.ctx;
      ctx.font = FONT;
      this._labelW = Math.ceil(Math.max.apply(null, this.run.lanes.map(function (lane) {
        return ctx.measureText(lane.label + " (" + lane.count.toLocaleString() + ")").width;
      }).concat([40]))) + 12;
    }
    return this._labelW;
  };

  Timeline.prototype.plotWidth = function () { return Math.max(1, Math.floor(this.canvas.clientWidth - this.labelWidth())); };

  Timeline.prototype.zoom = function (t0, t1) {
    var wall = this.run.wall, span = Math.min(Math.max(t1 - t0, Math.min(wall, 10 * this.run.tick, 1000)), wall);
    t0 = Math.min(Math.max(0, t0), wall - span);
    this.view = [t0, t0 + span];
    this.draw();
  };

  Timeline.prototype.timeAt = function (clientX) {
    var r = this.canvas.getBoundingClientRect(), x = clientX - r.left - this.labelWidth();
    return this.view[0] + (x / this.plotWidth()) * (this.view[1] - this.view[0]);
  };

  Timeline.prototype.onWheel = function (e) {
    var t = this.timeAt(e.clientX), f = Math.exp(e.deltaY * 0.0015), v = this.view;
    this.zoom(t - (t - v[0]) * f, t + (v[1] - t) * f);
  };

  Timeline.prototype.onMove = function (e) {
    if (this.drag) {
      var dt = ((e.clientX - this.drag.x) / this.plotWidth()) * (this.drag.view[1] - this.drag.view[0]);
      this.zoom(this.drag.view[0] - dt, this.drag.view[1] - dt);
      return;
    }
    var r = this.canvas.getBoundingClientRect(), y = e.clientY - r.top, x = e.clientX - r.left;
    var text = x < this.labelWidth() ? "" : this.describe(this.timeAt(e.clientX), y);
    if (!text) { this.tip.style.display = "none"; return; }
    this.tip.textContent = text;
    this.tip.style.display = "block";
    this.tip.style.left = Math.min(x + 12, this.canvas.clientWidth - 260) + "px";
    this.tip.style.top = (y + 14) + "px";
  };

  Timeline.prototype.describe = function (t, y) {
    var run = this.run, px = (this.view[1] - this.view[0]) / this.plotWidth();
    if (y < TOP) {
      var near = run.marks.filter(function (m) { return Math.abs(m[0] - t) <= 4 * px; });
      return near.map(function (m) { return m[1]; }).join("\n");
    }
    var lane = run.lanes[Math.floor((y - TOP) / LANE_H)];
    if (!lane) return "at " + fmtNs(t);
    if (this.mode === "overview") {
      var bin = run.wall / run.bins, k = Math.min(run.bins - 1, Math.max(0, Math.floor(t / bin))), ov = overview(lane);
      return lane.label + "  " + fmtNs(k * bin) + " - " + fmtNs((k + 1) * bin) + "\nbusy " +
        Math.round((100 * ov._busy[k]) / 255) + "%, " + ov._starts[k].toLocaleString() + " started";
    }
    var ev = events(lane), tick = run.tick, at = t / tick, slack = Math.max(2 * px / tick, 1);
    var i = Math.min(lowerBound(ev._start, at + slack), ev._start.length) - 1;
    for (var steps = 0; i >= 0 && steps < 5000; i--, steps++) {
      var s = ev._start[i], e = s + ev._duration[i];
      if (e + slack >= at) {
        var what = ONE[lane.kind] + " at " + fmtNs(s * tick) + ", " + fmtNs(ev._duration[i] * tick);
        if (ev._nbytes) what += ", " + fmtBytes(ev._nbytes[i]);
        return what + "\n" + run.sites[ev._site[i]];
      }
      if (ev._start[i] + lane.longest < at - slack) break;
    }
    return lane.label + " at " + fmtNs(t) + ": none";
  };

  Timeline.prototype.draw = function () {
    var run = this.run, canvas = this.canvas, ctx = this.ctx, dpr = window.devicePixelRatio || 1;
    var cssW = canvas.clientWidth, H = TOP + run.lanes.length * LANE_H + AXIS, width = this.plotWidth();
    var left = this.labelWidth();
    canvas.width = Math.round(cssW * dpr); canvas.height = Math.round(H * dpr); canvas.style.height = H + "px";
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, cssW, H);
    var t0 = this.view[0], t1 = this.view[1], span = t1 - t0;
    var operations = run.lanes.reduce(function (n, lane) { return n + lane.count; }, 0);
    this.mode = operations <= run.exact || span / width < run.wall / run.bins ? "events" : "overview";
    ctx.font = FONT; ctx.textBaseline = "middle";
    var busyPx = [];
    for (var i = 0; i < run.lanes.length; i++) {
      var lane = run.lanes[i], y = TOP + i * LANE_H, h = LANE_H - 4;
      ctx.fillStyle = "#5b6476";
      ctx.fillText(lane.label + " (" + lane.count.toLocaleString() + ")", 4, y + LANE_H / 2);
      ctx.fillStyle = "#f4f6fa"; ctx.fillRect(left, y + 2, width, h);
      var shares = this.mode === "overview" ? fromOverview(run, lane, t0, t1, width) : fromEvents(run, lane, t0, t1, width);
      ctx.fillStyle = COLORS[lane.kind];
      var count = 0;
      for (var x = 0; x < width; x++) {
        // square-root scale: a slice busy 1% of its time still shows a tenth of the lane's height
        if (shares[x] > 0) { var bar = Math.max(1, Math.sqrt(shares[x]) * h); ctx.fillRect(left + x, y + 2 + h - bar, 1, bar); count++; }
      }
      busyPx.push(count);
    }
    ctx.fillStyle = "#c0392b";
    run.marks.forEach(function (m) {
      if (m[0] < t0 || m[0] > t1) return;
      var mx = left + ((m[0] - t0) / span) * width;
      ctx.beginPath(); ctx.moveTo(mx - 5, 1); ctx.lineTo(mx + 5, 1); ctx.lineTo(mx, TOP - 2); ctx.closePath(); ctx.fill();
    });
    var axisY = TOP + run.lanes.length * LANE_H, step = niceStep(span / 6);
    ctx.fillStyle = "#5b6476"; ctx.strokeStyle = "#d8dde6"; ctx.textBaseline = "top";
    for (var t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
      var tx = left + ((t - t0) / span) * width;
      ctx.beginPath(); ctx.moveTo(tx + 0.5, TOP); ctx.lineTo(tx + 0.5, axisY + 3); ctx.stroke();
      ctx.fillText(fmtNs(t), Math.min(tx + 2, cssW - 60), axisY + 4);
    }
    this.box.dataset.mode = this.mode;
    this.box.dataset.busyPx = busyPx.join(",");
    this.box.dataset.view = Math.round(t0) + "," + Math.round(t1);
    this.box.dataset.plotLeft = String(left);
  };

  var timelines = [];
  document.querySelectorAll(".timeline[data-run]").forEach(function (box) {
    var run = runs[Number(box.dataset.run)];
    if (run) timelines.push(new Timeline(box, run));
  });
  function drawAll() { timelines.forEach(function (tl) { tl.draw(); }); }
  drawAll();
  window.addEventListener("resize", drawAll);
  window.offloadProf = {
    // zoom run `index`'s timeline to [t0, t1) ns from its start (the wheel and a drag do the same)
    zoom: function (index, t0, t1) { timelines[index].zoom(t0, t1); },
    drawnMs: performance.now()
  };
  document.documentElement.dataset.timeline = "drawn";
})();
