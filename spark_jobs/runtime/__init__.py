"""Session building, job specs, progress logging and the one-writer lock."""
