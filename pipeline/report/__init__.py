"""The run's report: report.json, report.md and report.html, built from the steps' stats."""
