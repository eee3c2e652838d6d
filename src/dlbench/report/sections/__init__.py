"""The report page's sections, one module each, in page order; `report.html` assembles them.

`header` (each run's cards), `summary` (At a glance and the headline chart), `results` (the results table),
`ranking` (against published results), `speedups`, `scaling`, `telemetry`, `step_times` (the step-time
distribution), `fleet` (hosts slower than their peers), `environment` and `methodology`. A chart section returns
a group (`figures.group`): id, title, intro, figures (`figures.figure`, each chart embedded as an SVG data URI)
and notes, or None when the report has nothing to show in it.
"""
