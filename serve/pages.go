package serve

import (
	"bytes"
	"html/template"
	"log/slog"
	"net/http"
	"path"
	"strings"

	"github.com/locktest/locktest/reports"
)

const style = `<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 1180px; padding: 0 1em; color: #222; }
h1 { font-size: 1.35em; } table { border-collapse: collapse; margin: .4em 0; }
td, th { padding: .25em .7em; border-bottom: 1px solid #eee; text-align: left; vertical-align: top; }
th { background: #f6f6f6; } td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.safe { background: #e3f4e5; } .unsafe { background: #fbe2e2; } .unknown { background: #fff3d6; }
.in-progress { background: #e3ecfb; } .stopped { background: #eee; }
.banner { padding: .7em 1em; border-radius: 6px; margin: .8em 0; font-size: 1.1em; }
pre, code { font: 12.5px ui-monospace, monospace; background: #f4f4f4; border-radius: 3px; }
pre { padding: .6em; overflow-x: auto; } small { color: #555; }
pre#summary { white-space: pre-wrap; overflow-wrap: anywhere; }
h2 { font-size: 1.1em; margin: 1.4em 0 .3em; } details summary { cursor: pointer; color: #333; }
.charts { display: flex; flex-wrap: wrap; gap: .5em 1.5em; } figure { margin: 0; } figcaption { font-size: .9em; }
</style>`

var funcs = template.FuncMap{"upper": strings.ToUpper, "join": strings.Join, "base": path.Base}

var indexTmpl = template.Must(template.New("index").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">{{if .Refresh}}<meta http-equiv="refresh" content="5">{{end}}
<title>locktest: {{len .Runs}} run(s)</title>` + style + `</head><body>
<h1>locktest store <code>{{.Store}}</code></h1>
<p>{{len .Runs}} run(s), newest first. <a href="` + Prefix + reports.CompareHTML + `">Designs × faults comparison</a> of the checked runs.
{{if .Refresh}}<small>A run is in progress: this page reloads every 5 s.</small>{{end}}</p>
{{range .Groups}}<section class="group">
{{if eq .Kind "scenario"}}<h2>{{.Title}} <small>{{len .Runs}} run(s)</small></h2>{{template "runs" .Runs}}
{{else}}<h2>{{.Kind}} <code>{{.Title}}</code> <small>{{len .Runs}} run(s)</small></h2>
<div class="banner {{.Class}}"><a href="/{{.Page}}">{{base .Page}}</a> — {{.Summary}} · <a href="/{{.Path}}/">files</a></div>
{{if .Runs}}<details><summary>its {{len .Runs}} run(s)</summary>{{template "runs" .Runs}}</details>{{end}}{{end}}
</section>
{{else}}<p>No run in this store yet: <code>locktest run --impl NAME --store {{.Store}}</code></p>{{end}}
</body></html>
{{define "runs"}}<table class="runs"><tr><th>scenario</th><th>started</th><th>verdict</th><th class="num">lost updates</th><th>run</th><th>files</th></tr>
{{range .}}<tr class="{{.Class}}"><td><a href="` + Prefix + `run/{{.Path}}">{{.Config.Scenario}}</a><br><small>{{.Path}}</small></td>
<td>{{if not .Started.IsZero}}{{.Started.Format "2006-01-02 15:04:05"}}{{end}}</td>
<td><b>{{.Outcome | upper}}</b></td>
<td class="num">{{.Lost}}</td>
<td>{{if .IsDone}}{{.Results.DesignName}} · {{join .Results.Faults ", "}} · seed {{.Results.Seed}}{{else}}{{.Progress}}{{end}}</td>
<td>{{if .IsDone}}<a href="/{{.Path}}/report.html">report</a> · {{end}}<a href="/{{.Path}}/">files</a></td></tr>
{{end}}</table>{{end}}
`))

var runTmpl = template.Must(template.New("run").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">{{if .IsRunning}}<meta http-equiv="refresh" content="2">{{end}}
<title>{{.Outcome | upper}} — {{.Config.Scenario}}</title>` + style + `</head><body>
<p><a href="/">all runs</a></p>
<h1>{{.Config.Scenario}}</h1>
<div>impl <b>{{.Config.Impl}}</b> · workload <b>{{.Config.Workload}}</b> · faults <b>{{join .Config.Faults ", "}}</b> · seed <b>{{.Config.Seed}}</b> · {{.Config.Clients}} clients · {{.Config.Duration}}</div>
{{if .IsDone}}
<div class="banner {{.Outcome}}" id="verdict"><b>{{.Outcome | upper}}</b> — {{.Headline}}</div>
<p><a href="/{{.Path}}/report.html">report.html</a> (plots, violations, faults) · <a href="/{{.Path}}/results.json">results.json</a> · <a href="/{{.Path}}/history.jsonl">history.jsonl</a> · <a href="/{{.Path}}/">every file</a></p>
{{with .Hit}}<p>The check judged <b>{{.}}</b> fault strike(s) effective (a client was granted a lock another still believed it held); the figures below are what the run saw as it went.</p>{{end}}
{{template "figures" .Figures}}
{{with .Summary}}<pre id="summary">{{.}}</pre>{{end}}
{{else}}
<div class="banner {{.Class}}" id="verdict"><b>{{.Outcome | upper}}</b>{{if .IsRunning}} — {{.Phase}}; this page reloads every 2 s until the verdict is in{{else}} — the run ended before its check (killed?): <code>locktest analyze {{.Dir}}</code> checks what it wrote{{end}}</div>
<p id="progress">{{.Progress}}{{if not .IsRunning}} <small>(when the history ends)</small>{{end}}</p>
<table><tr><th>elapsed</th><td class="num">{{printf "%.1f" .Elapsed}} s of {{.Config.Duration}}</td></tr>
<tr><th>client operations</th><td class="num">{{.Tally.Ops}}</td></tr>
<tr><th>acquisitions</th><td class="num">{{.Tally.Acquisitions}}</td></tr>
{{if .Tally.Sections}}<tr><th>lost updates so far</th><td class="num">{{.Tally.Lost}}</td></tr>{{end}}
{{with .Memory}}<tr><th>memory</th><td>{{.}}</td></tr>{{end}}</table>
<p><small>Lost updates so far are certain ones: two acknowledged critical sections that read the same value. The check after the run decides; the mutual-exclusion check runs only then.</small></p>
{{if .Strikes}}<h2>Faults</h2><table><tr><th>fault</th><th>target</th><th>at</th><th>lasted</th></tr>
{{range .Strikes}}<tr><td>{{.Name}}</td><td>{{.Target}}</td><td class="num">{{.At}}</td><td class="num">{{.Lasted}}</td></tr>
{{end}}</table>{{end}}
{{template "figures" .Figures}}
<p><a href="/{{.Path}}/history.jsonl">history.jsonl</a> (as written so far) · <a href="/{{.Path}}/">every file</a></p>
{{end}}
</body></html>
{{define "figures"}}{{with .}}<h2 id="figures">Over time</h2>
<p><small>From the run's samples (samples.jsonl), taken every second or more from before the first client until after the last:{{if .Run}} lost updates certain so far, fault strikes begun and those that hit (a client granted a key another still believed it held, during the strike or a lease after it: an estimate the check decides),{{end}} memory, and sessions as each server counts them.</small></p>
<div class="charts">{{range .Charts}}<figure><figcaption>{{.Title}} <small>(0–{{.Max}})</small></figcaption>
<svg viewBox="-2 -2 ` + chartBox + `" width="320" height="80" role="img"><rect x="0" y="0" width="300" height="60" fill="none" stroke="#ddd"/>{{range .Lines}}<polyline fill="none" stroke="{{.Color}}" stroke-width="1.5" points="{{.Points}}"><title>{{.Name}}</title></polyline>{{end}}</svg>
<div>{{range .Lines}}<span style="color:{{.Color}}">■</span> {{.Name}} {{.Last}} {{end}}</div></figure>{{end}}</div>
<table id="over-time"><tr><th>time</th>{{if .Run}}<th class="num">ops</th><th class="num">lost</th><th class="num">strikes hit/begun</th>{{end}}<th class="num">coordinator MB</th>{{range .Servers}}<th class="num">{{.}} MB</th>{{end}}{{range .Counted}}<th class="num">{{.}} sessions</th>{{end}}</tr>
{{range .Rows}}<tr><td class="num">{{.At}}</td>{{if $.Run}}<td class="num">{{.Ops}}</td><td class="num">{{.Lost}}</td><td class="num">{{.Effective}}/{{.Strikes}}</td>{{end}}<td class="num">{{.Coordinator}}</td>{{range .Memory}}<td class="num">{{.}}</td>{{end}}{{range .Sessions}}<td class="num">{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}{{end}}
`))

// chartBox is the charts' viewBox size: their 300×60 box and a margin.
const chartBox = "304 64"

// render executes t into a buffer first, so that a template error is a 500
// and never half a page.
func render(w http.ResponseWriter, t *template.Template, data any) {
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		slog.Error("serve: render", "page", t.Name(), "err", err)
		http.Error(w, "render "+t.Name()+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}
