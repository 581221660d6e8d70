"""inferbound."""
