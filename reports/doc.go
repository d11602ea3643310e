// Package reports turns checked runs into what people read: the
// one-screen summary, results.json, report.html with the holder timeline,
// latency and rate plots, porcupine's visualizations, the designs × faults
// comparison (HTML, PNG, Markdown, JSON) and JUnit XML for CI.
package reports
