// Keyboard users keep their place (WCAG 2.4.3, 2.4.7), and reach what scrolls (2.1.1).
// tests/test_accessibility.py checks each of these in the browser.
document.addEventListener("DOMContentLoaded", () => {
  // sphinx-book-theme blurs the theme switch and the sidebar toggles on every click, so that a
  // mouse click leaves no focus ring; a click made with Enter or Space (a click whose detail
  // is 0) would leave the focus nowhere, and closing the sidebar with Escape would too. Those
  // get the focus back.
  let opener = null;
  for (const button of document.querySelectorAll(
      ".theme-switch-button, .primary-toggle, .secondary-toggle")) {
    button.addEventListener("click", (event) => {
      if (event.detail === 0) {
        button.focus();
        opener = button;
      }
    });
  }
  for (const dialog of document.querySelectorAll("dialog")) {
    dialog.addEventListener("close", () => {
      if (opener) opener.focus();
      opener = null;
    });
  }
  // A formula wider than its column (the typeset formula, not the ink of its letters, which
  // may stick out a pixel or two) scrolls: course.css lets it (class course-wide), and it
  // takes the focus, so that the keyboard can scroll it. The others stay out of the Tab order.
  const reachable = () => {
    for (const math of document.querySelectorAll(
        'span.math, div.math, mjx-container[display="true"]')) {
      const formula = math.querySelector("mjx-math");
      const wide = formula !== null
        && formula.getBoundingClientRect().width > math.clientWidth + 2;
      if (!math.matches("mjx-container")) math.classList.toggle("course-wide", wide);
      if (wide) math.tabIndex = 0;
      else math.removeAttribute("tabindex");
    }
  };
  window.addEventListener("resize", reachable);
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    // measured once the formulas are typeset and their fonts loaded (before, they have
    // other widths)
    MathJax.startup.promise.then(() => document.fonts.ready).then(reachable);
  }
});
