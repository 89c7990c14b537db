// MathJax settings for pymdownx.arithmatex (generic mode) and the notebooks' LaTeX outputs ($…$ in
// their jp-RenderedLatex outputs only; code cells are <pre> and never typeset). MathJax itself is vendored under
// javascripts/vendor/ (SVG output: no web fonts to fetch), so the site renders offline.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"], ["$", "$"]],
    displayMath: [["\\[", "\\]"], ["$$", "$$"]],
    processEscapes: true,
    processEnvironments: true
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex|jp-RenderedLatex"
  }
};

// Re-typeset after material's instant navigation swaps the page content (the first page is typeset
// by MathJax's own startup; the SVG output has no font cache to clear).
if (typeof document$ !== "undefined") {
  document$.subscribe(() => {
    if (!window.MathJax || typeof MathJax.typesetPromise !== "function") {
      return;
    }
    const output = MathJax.startup && MathJax.startup.output;
    if (output && typeof output.clearCache === "function") {
      output.clearCache();
    }
    MathJax.typesetClear();
    MathJax.texReset();
    MathJax.typesetPromise();
  });
}
