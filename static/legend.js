// The charts' presentation beside uPlot, one plugin per chart (app/web/plot.py adds it): the
// legend's samples drawn in each line's own dash, the tooltip that shows the exact figures under
// the pointer (the browser module writes every text: text(chart id, series, index); "" leaves a
// row out), the marks (the chosen context or batch, a limit: window.kvcalcMarks[chart id]) and an
// x axis that ends where the data ends. The tooltip floats over the plot, so hovering moves
// nothing on the page. It computes nothing.
window.kvcalcMarks = window.kvcalcMarks || {};

(() => {
  // A CSS background that draws a dash pattern (px, as the canvas does) along a legend sample.
  const dashed = (color, dash) => {
    if (!dash || !dash.length) return color;
    const stops = [];
    let at = 0;
    dash.forEach((length, i) => {
      const paint = i % 2 ? "transparent" : color;
      stops.push(`${paint} ${at}px ${at + length}px`);
      at += length;
    });
    return `repeating-linear-gradient(90deg, ${stops.join(", ")})`;
  };
  const isDecade = v => Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9;
  const decades = (u, splits) => splits.map(v => (v > 0 && isDecade(v) ? v : null));

  const sample = (series, el) => {
    const color = series.stroke(), dot = el.closest(".u-series").classList.contains("kv-dot");
    el.style.border = "none";
    el.style.width = dot ? "0.7em" : "1.9em";
    el.style.height = dot ? "0.7em" : `${Math.max(2, series.width)}px`;
    el.style.borderRadius = dot ? "50%" : "0";
    el.style.background = dot ? color : dashed(color, series.dash);
  };

  const swatch = (series) => {
    const s = document.createElement("span");
    s.className = "chart-tip-swatch";
    s.style.background = dashed(series.stroke(), series.dash);
    return s;
  };

  const drawMarks = (u, marks) => {
    const ctx = u.ctx, px = uPlot.pxRatio, {left, top, width, height} = u.bbox;
    ctx.save();
    // Inside the plot, and a point's width around it: a point at the axis's end stays whole.
    const room = 8 * px;
    ctx.beginPath();
    ctx.rect(left - room, top - room, width + 2 * room, height + 2 * room);
    ctx.clip();
    marks.forEach((m, k) => {
      const x = u.valToPos(m.x, "x", true);
      ctx.strokeStyle = m.color;
      ctx.lineWidth = 1.5 * px;
      ctx.setLineDash((m.dash || []).map(d => d * px));
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + height);
      ctx.stroke();
      ctx.setLineDash([]);
      (m.dots || []).forEach(d => {
        const y = u.valToPos(d.y, "y", true);
        ctx.beginPath();
        ctx.arc(x, y, 5.5 * px, 0, 2 * Math.PI);
        ctx.fillStyle = d.color;
        ctx.fill();
        ctx.lineWidth = 2 * px;
        ctx.strokeStyle = m.halo;
        ctx.stroke();
      });
      if (m.text) {
        // The words on the side of the line with more room, one row per mark, over a halo.
        const font = size => `600 ${size * px}px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif`;
        const gap = 5 * px;
        ctx.font = font(12);
        let w = ctx.measureText(m.text).width;
        if (w > width - 2 * gap) {
          // Wider than a narrow plot: smaller, down to 9 px.
          ctx.font = font(Math.max(9, 12 * (width - 2 * gap) / w));
          w = ctx.measureText(m.text).width;
        }
        let right = x > left + width / 2, tx = x + (right ? -gap : gap);
        // Kept inside the plot: words too long for their side start at the plot's other edge.
        if (right && tx - w < left) [right, tx] = [false, left + gap];
        else if (!right && tx + w > left + width) [right, tx] = [true, left + width - gap];
        ctx.textAlign = right ? "right" : "left";
        ctx.textBaseline = "top";
        const ty = top + (4 + 16 * k) * px;
        ctx.lineWidth = 4 * px;
        ctx.strokeStyle = m.halo;
        ctx.lineJoin = "round";
        ctx.strokeText(m.text, tx, ty);
        ctx.fillStyle = m.color;
        ctx.fillText(m.text, tx, ty);
      }
    });
    ctx.restore();
  };

  window.kvcalcChartPlugin = (id, text) => {
    let tip = null;
    return {
      opts: (u, opts) => {
        // uPlot rounds a log axis out to whole powers of its base (a 160K limit would end the
        // axis at 256K); the axis ends at the data's own ends instead.
        opts.scales.x.range = (u, lo, hi) => (lo == null ? [1, 2] : lo === hi ? [lo / 2, hi * 2] : [lo, hi]);
        // Grid lines and ticks at whole decades only on base-10 axes: every minor step is noise.
        opts.axes.forEach((axis, i) => {
          const scale = opts.scales[i === 0 ? "x" : "y"];
          if (scale && scale.log === 10) {
            axis.grid = Object.assign({}, axis.grid, {filter: decades});
            axis.ticks = Object.assign({}, axis.ticks, {filter: decades});
          }
        });
        return opts;
      },
      hooks: {
        init: [u => {
          u.root.querySelectorAll(".u-legend .u-series").forEach((row, n) => {
            const series = u.series[n + 1];
            if (!series) return;
            if (series.kvShape === "dot") row.classList.add("kv-dot");
            const marker = row.querySelector(".u-marker");
            if (marker) sample(series, marker);
          });
          tip = document.createElement("div");
          tip.className = "chart-tip";
          tip.hidden = true;
          u.root.appendChild(tip);        // placed against the chart's box (.chart), over the plot
        }],
        setCursor: [u => {
          const idx = u.cursor.idx;
          if (idx == null || u.cursor.left < 0) {
            tip.hidden = true;
            return;
          }
          const rows = [];
          const head = document.createElement("div");
          head.className = "chart-tip-x";
          head.textContent = text(id, 0, idx);
          rows.push(head);
          for (let i = 1; i < u.series.length; i++) {
            if (!u.series[i].show) continue;
            const value = text(id, i, idx);
            if (!value) continue;
            const row = document.createElement("div");
            const name = document.createElement("span");
            name.className = "chart-tip-name";
            name.textContent = u.series[i].label;
            row.append(swatch(u.series[i]), name, document.createTextNode(" " + value));
            rows.push(row);
          }
          tip.replaceChildren(...rows);
          // Away from the pointer, on the half of the plot it is not over; a narrow plot gives
          // the tooltip the chart's whole width.
          const width = u.over.clientWidth, plotLeft = u.over.offsetLeft, box = u.root.parentNode.clientWidth;
          const onRight = u.cursor.left > width / 2, narrow = width < 420;
          tip.style.left = narrow ? "4px" : onRight ? `${plotLeft + 4}px` : "";
          tip.style.right = narrow ? "4px" : onRight ? "" : `${box - plotLeft - width + 4}px`;
          tip.classList.toggle("chart-tip-wide", narrow);
          tip.hidden = false;
        }],
        draw: [u => drawMarks(u, window.kvcalcMarks[id] || [])],
      },
    };
  };
})();
