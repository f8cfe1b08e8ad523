// The landing page's live charts, served by the collector itself (no other code, nothing from elsewhere).
//
// It reads the history API (GET api/v1/samples) twice a second: first the
// last window of samples, then only what came after.  When an answer carries
// data.cursor the next request hands it back (each sample once, also one a
// slower field group stamps earlier); otherwise it asks since the newest
// sample seen + 1 µs.  Per GPU it keeps the window's samples of utilisation,
// power, framebuffer and temperature and draws each on a <canvas>: a column of
// pixels shows the largest sample of the time it covers, so a 300 ms spike
// stays visible however many samples share a pixel.  Each canvas says in
// data-max the largest value it drew and in data-samples how many samples it
// holds (what the tests read); the page's tiles get the newest values.
"use strict";

(function () {
  const POLL_MS = 500;                 // at most twice a second
  const HOLD_US = 10e6;                // a gap between samples up to this is drawn as the earlier value held
  const MIN_SPAN_US = 60e6;            // the charts' shortest time axis, while less than the window is held
  // by DCGM field id (newer DCGM releases renamed some fields; the ids stay): GPU_UTIL, POWER_USAGE, FB_USED,
  // GPU_TEMP
  const CHARTS = [
    {key: "util", field: 203, title: "util", unit: "%", digits: 0},
    {key: "power", field: 155, title: "power", unit: "W", digits: 0},
    {key: "fb", field: 252, title: "fb used", unit: "GiB", digits: 1, scale: 1 / 1024},
    {key: "temp", field: 150, title: "temp", unit: "°C", digits: 0},
  ];
  const FB_FREE = 251;   // DCGM_FI_DEV_FB_FREE, for the framebuffer chart's top (used + free)

  const root = document.getElementById("charts");
  if (!root) {
    return;
  }
  const windowUs = Number(root.dataset.windowS || 300) * 1e6;
  // the API's address without any user:password of the page's own (fetch refuses such URLs; the browser
  // still sends the credentials it authenticated the page with)
  const api = new URL(root.dataset.api, window.location.href);
  api.username = "";
  api.password = "";

  const series = new Map();    // "gpu/field id" -> {ts: [µs], v: [value or null]}, oldest first
  const gpus = new Map();      // gpu -> {model, canvases: {key: canvas}}
  let cursor = null;
  let newestUs = 0;
  let oldestUs = Infinity;     // the first sample read: a page opened on a young collector spans what it has
  let polls = 0;
  const status = document.createElement("p");
  status.className = "status";
  root.appendChild(status);
  const grid = document.createElement("div");
  grid.className = "gpus";
  root.appendChild(grid);
  root.hidden = false;

  function seconds(us) {
    // exact decimal Unix seconds for since=: µs stamps are integers well within a double's exact range
    const whole = Math.floor(us / 1e6);
    return whole + "." + String(us - whole * 1e6).padStart(6, "0");
  }

  function nextUrl() {
    const url = new URL(api);
    for (const field of CHARTS.map((c) => c.field).concat([FB_FREE])) {
      url.searchParams.append("field", String(field));
    }
    if (cursor !== null) {
      url.searchParams.set("cursor", cursor);
    } else if (newestUs > 0) {
      url.searchParams.set("since", seconds(newestUs + 1));
    } else {
      url.searchParams.set("since", Math.round(windowUs / 1e6) + "s");
    }
    return url;
  }

  function keep(key, samples) {
    let s = series.get(key);
    if (!s) {
      s = {ts: [], v: []};
      series.set(key, s);
    }
    for (const [ts, value] of samples) {
      let i = s.ts.length;
      while (i > 0 && s.ts[i - 1] > ts) {   // a late sample stamped earlier: in its place
        i--;
      }
      s.ts.splice(i, 0, ts);
      s.v.splice(i, 0, value);
      newestUs = Math.max(newestUs, ts);
      oldestUs = Math.min(oldestUs, ts);
    }
  }

  function trim() {
    const oldest = newestUs - windowUs;
    for (const s of series.values()) {
      let n = 0;
      while (n < s.ts.length && s.ts[n] < oldest) {
        n++;
      }
      if (n > 0) {
        s.ts.splice(0, n);
        s.v.splice(0, n);
      }
    }
  }

  function gpuCard(gpu, model) {
    let card = gpus.get(gpu);
    if (card) {
      return card;
    }
    const box = document.createElement("div");
    box.className = "gpu";
    const head = document.createElement("h3");
    head.textContent = "GPU " + gpu + (model ? " " + model : "");
    box.appendChild(head);
    const row = document.createElement("div");
    row.className = "row";
    box.appendChild(row);
    card = {canvases: {}};
    for (const chart of CHARTS) {
      const canvas = document.createElement("canvas");
      canvas.dataset.gpu = gpu;
      canvas.dataset.chart = chart.key;
      canvas.setAttribute("role", "img");
      canvas.setAttribute("aria-label", "GPU " + gpu + " " + chart.title);
      row.appendChild(canvas);
      card.canvases[chart.key] = canvas;
    }
    const after = [...gpus.keys()].filter((g) => g > gpu).sort((a, b) => a - b)[0];
    grid.insertBefore(box, after === undefined ? null : gpus.get(after).box);
    card.box = box;
    gpus.set(gpu, card);
    return card;
  }

  function merge(data) {
    for (const s of data.series || []) {
      if (!s.entity || s.entity.group !== "GPU" || s.gpu === null) {
        continue;   // a MIG instance's or link's series: the charts are whole GPUs'
      }
      gpuCard(s.gpu, (s.labels || {}).modelName || "");
      keep(s.gpu + "/" + s.field_id, s.samples);
    }
    trim();
  }

  // the largest sample of each pixel column over [from, to); columns without one hold the earlier sample
  function columns(s, from, to, width, scale) {
    const out = new Float64Array(width).fill(NaN);
    const perColumn = (to - from) / width;
    let last = -1;
    let lastTs = 0;
    let lastValue = NaN;
    for (let i = 0; i < s.ts.length; i++) {
      const value = s.v[i];
      if (value === null) {
        continue;
      }
      const x = Math.min(width - 1, Math.floor((s.ts[i] - from) / perColumn));
      if (x < 0) {
        continue;
      }
      if (last >= 0 && x > last + 1 && s.ts[i] - lastTs <= HOLD_US) {
        out.fill(lastValue, last + 1, x);
      }
      const scaled = value * scale;
      out[x] = Number.isNaN(out[x]) ? scaled : Math.max(out[x], scaled);
      last = x;
      lastTs = s.ts[i];
      lastValue = scaled;
    }
    return out;
  }

  function newest(s) {
    for (let i = s ? s.v.length - 1 : -1; i >= 0; i--) {
      if (s.v[i] !== null) {
        return s.v[i];
      }
    }
    return null;
  }

  function text(value, chart) {
    return value === null ? "-" : value.toFixed(chart.digits) + " " + chart.unit;
  }

  function draw(gpu, chart, canvas) {
    const s = series.get(gpu + "/" + chart.field);
    const ratio = window.devicePixelRatio || 1;
    const width = Math.max(1, Math.round(canvas.clientWidth * ratio));
    const height = Math.max(1, Math.round(canvas.clientHeight * ratio));
    if (canvas.width !== width || canvas.height !== height) {
      canvas.width = width;
      canvas.height = height;
    }
    const ctx = canvas.getContext("2d");
    const style = getComputedStyle(canvas);
    ctx.clearRect(0, 0, width, height);
    const scale = chart.scale || 1;
    const from = newestUs - Math.min(windowUs, Math.max(MIN_SPAN_US, newestUs - oldestUs));
    const col = s ? columns(s, from, newestUs + 1, width, scale) : new Float64Array(0);
    let max = -Infinity;
    for (const v of col) {
      if (!Number.isNaN(v)) {
        max = Math.max(max, v);
      }
    }
    let top = chart.key === "util" ? 100 : max > 0 ? max * 1.15 : 1;
    if (chart.key === "fb") {
      const used = newest(s);
      const free = newest(series.get(gpu + "/" + FB_FREE));
      top = used !== null && free !== null ? Math.max((used + free) * scale, max) : top;
    } else if (chart.key === "temp") {
      top = Math.max(top, 100);
    }
    ctx.fillStyle = style.getPropertyValue("--fill") || "#4a90d9";
    const label = 14 * ratio;   // the caption's band stays above the plot
    for (let x = 0; x < col.length; x++) {
      if (!Number.isNaN(col[x])) {
        const h = Math.max(ratio, (col[x] / top) * (height - label));
        ctx.fillRect(x, height - h, 1, h);
      }
    }
    ctx.fillStyle = style.getPropertyValue("--text") || "#222";
    ctx.font = 10 * ratio + "px sans-serif";
    ctx.textBaseline = "top";
    const now = newest(s);
    ctx.fillText(chart.title + " " + text(now === null ? null : now * scale, chart) +
                 (max > -Infinity ? ", max " + max.toFixed(chart.digits) : ""), 2 * ratio, 1 * ratio);
    canvas.dataset.max = max > -Infinity ? String(max) : "";
    canvas.dataset.samples = s ? String(s.ts.length) : "0";
  }

  function tiles() {
    for (const gpu of gpus.keys()) {
      const tile = document.querySelector('.tile[data-gpu="' + gpu + '"]');
      if (!tile) {
        continue;
      }
      for (const chart of CHARTS) {
        const cell = tile.querySelector('[data-value="' + chart.key + '"]');
        const value = newest(series.get(gpu + "/" + chart.field));
        if (cell && value !== null) {
          if (chart.key === "fb") {
            const free = newest(series.get(gpu + "/" + FB_FREE));
            cell.textContent = (value / 1024).toFixed(1) +
              (free !== null ? " / " + ((value + free) / 1024).toFixed(0) : "") + " GiB";
          } else {
            cell.textContent = text(value, chart);
          }
        }
      }
    }
  }

  function redraw() {
    for (const [gpu, card] of gpus) {
      for (const chart of CHARTS) {
        draw(gpu, chart, card.canvases[chart.key]);
      }
    }
    tiles();
  }

  async function poll() {
    let again = POLL_MS;
    try {
      const answer = await fetch(nextUrl(), {cache: "no-store", credentials: "same-origin"});
      const body = await answer.json();
      if (!answer.ok) {
        status.textContent = "history API: " + answer.status + " " + (body.error || "");
        if (cursor !== null && answer.status === 400) {
          cursor = null;   // a collector restarted under us: start again from the newest sample seen
        }
      } else {
        merge(body.data);
        cursor = typeof body.data.cursor === "string" ? body.data.cursor : null;
        if (body.data.truncated) {
          again = 0;      // more is waiting: read it now
        }
        polls++;
        root.dataset.polls = String(polls);
        status.textContent = gpus.size ? "" : "no GPU samples yet";
        redraw();
      }
    } catch (error) {
      status.textContent = "the collector does not answer (" + error.message + "); retrying";
    }
    window.setTimeout(poll, again);
  }

  window.addEventListener("resize", redraw);
  poll();
})();
