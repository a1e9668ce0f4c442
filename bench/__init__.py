"""Side-by-side benchmarks (``make bench``); not shipped, not tested for timings."""
