"""Side-by-side benchmarks that print ratios; each runs from the repository's root as
``python -m benchmarks.NAME`` (``make bench``, ``make bench-vs``) and ends with one JSON line
``{"benchmark": NAME, "ratios": {...}, "figures": {...}}``. Modules whose names start with
an underscore are the helpers they share."""
