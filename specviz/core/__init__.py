"""The engine and its records: settings (config), the step (engine), warping and sampling, traces."""
