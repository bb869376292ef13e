"""The HTML post-mortem page: geometry, markup, SVG timeline and the page with its CSS and script files."""
