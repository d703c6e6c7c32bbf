"""What serving the app from one machine needs, for every page: the server's configuration (config.py, the app's one
reader of the environment), the compute turns, the shared pairs, each student's share, the book of timings, the busy
notice, downloads, suffix decoding's history."""
