// uPlot asks every series for its legend text on each redraw. Only while the pointer is over a
// point is there anything to show, and then the browser module supplies the exact text; this
// adapter keeps the other calls out of Python. It computes nothing.
window.kvcalcLegend = (text) => (plot, value, series, index) =>
  index == null ? "" : text(plot.root.parentNode.id, series, index);
