// Keyboard users keep their place (WCAG 2.4.3, 2.4.7). sphinx-book-theme blurs the theme switch
// and the sidebar toggles on every click, so that a mouse click leaves no focus ring; a click
// made with Enter or Space (a click whose detail is 0) would leave the focus nowhere. Those get
// the focus back. tests/test_accessibility.py presses Enter on the theme switch three times.
document.addEventListener("DOMContentLoaded", () => {
  for (const button of document.querySelectorAll(
      ".theme-switch-button, .primary-toggle, .secondary-toggle")) {
    button.addEventListener("click", (event) => {
      if (event.detail === 0) button.focus();
    });
  }
});
