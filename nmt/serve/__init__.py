"""`nmt serve`: trained models behind OpenNMT-py's REST API, with micro-batched decoding,
request guards and a page that draws the attention (needs the `serve` extra)."""
