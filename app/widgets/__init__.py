"""Dashboard widgets, one per file; each takes its data as attributes set by its screen."""
