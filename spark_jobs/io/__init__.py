"""Sources (landing files), sinks (Delta) and the quarantine of bad records."""
