#include "launcher/status/status_page.hpp"

#include <fmt/format.h>

#include "launcher/http/html.hpp"

namespace ddp::launch::status {
namespace {

using http::html_escape;

constexpr const char* kStyle = R"(
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fafafa}
h1{font-size:1.3em;margin:0 0 .3em} .hdr span{margin-right:1.5em} .muted{color:#777}
table{border-collapse:collapse;margin:1em 0;background:#fff} td,th{border:1px solid #ddd;padding:.3em .7em;text-align:right}
th{background:#f0f0f0} td.state,td.straggler{text-align:left} tr.failed td{background:#fdd} tr.straggling td{background:#ffe9c7}
svg.chart{background:#fff;border:1px solid #ddd;margin:.3em 1em .3em 0} ol#events{font:12px monospace;background:#fff;border:1px solid #ddd;padding:.5em 2.5em} ol#events li{word-break:break-all}
)";

// The script: fetch /status.json, rebuild the rows, charts and events with textContent only.
constexpr const char* kScript = R"(
(function(){
function el(tag,text,cls){var e=document.createElement(tag);if(text!==undefined)e.textContent=String(text);if(cls)e.className=cls;return e;}
function fmt(s){return s===null||s===undefined?'-':Number(s).toFixed(3)+' s';}
function chart(r){
  var ns='http://www.w3.org/2000/svg',svg=document.createElementNS(ns,'svg');
  svg.setAttribute('class','chart');svg.setAttribute('width','320');svg.setAttribute('height','90');
  var h=r.step_history||[],t=document.createElementNS(ns,'text');
  t.setAttribute('x','4');t.setAttribute('y','12');t.setAttribute('font-size','11');
  t.textContent='rank '+r.rank+' step time (last '+(h.length?Math.round(h[h.length-1][0]-h[0][0]):0)+' s)';svg.appendChild(t);
  if(h.length>1){var t0=h[0][0],t1=h[h.length-1][0],m=0;h.forEach(function(p){m=Math.max(m,p[1]);});
    var pts=h.map(function(p){return (5+310*(p[0]-t0)/Math.max(t1-t0,1e-9)).toFixed(1)+','+(85-65*p[1]/Math.max(m,1e-9)).toFixed(1);}).join(' ');
    var l=document.createElementNS(ns,'polyline');l.setAttribute('points',pts);l.setAttribute('fill','none');l.setAttribute('stroke','#36c');svg.appendChild(l);
    var mx=document.createElementNS(ns,'text');mx.setAttribute('x','250');mx.setAttribute('y','12');mx.setAttribute('font-size','11');mx.textContent='max '+m.toFixed(3)+' s';svg.appendChild(mx);}
  return svg;}
function goodput(g){var t='goodput '+(100*g.ratio).toFixed(1)+'% of '+g.wall_s.toFixed(1)+' s',sep=': ';
  Object.keys(g.badput_s).forEach(function(k){if(g.badput_s[k]>=0.05){t+=sep+k+' '+g.badput_s[k].toFixed(1)+' s';sep=', ';}});
  return t+(g.pending_s>=0.05?' (not classified yet: '+g.pending_s.toFixed(1)+' s)':'');}
function render(s){
  document.getElementById('attempt').textContent=s.attempt;
  if(s.goodput)document.getElementById('goodput').textContent=goodput(s.goodput);
  document.getElementById('world').textContent=s.world_size;
  document.getElementById('uptime').textContent=Math.round(s.uptime_s)+' s';
  document.getElementById('finished').textContent=s.finished?('finished: '+s.finished):'running';
  var body=document.getElementById('ranks');while(body.firstChild)body.removeChild(body.firstChild);
  s.ranks.forEach(function(r){var tr=el('tr');tr.id='rank-'+r.rank;
    tr.className=(r.state==='failed'?'failed ':'')+(r.straggler?'straggling':'');
    tr.appendChild(el('td',r.rank,'rank'));tr.appendChild(el('td',r.local_rank));tr.appendChild(el('td',r.fed?r.step:'-','step'));
    tr.appendChild(el('td',fmt(r.step_s),'step_s'));tr.appendChild(el('td',r.state==='running'?r.since_progress_s.toFixed(1)+' s ago':'-','progress'));
    tr.appendChild(el('td',r.state,'state'));tr.appendChild(el('td',r.straggler?'yes':'','straggler'));body.appendChild(tr);});
  var charts=document.getElementById('charts');while(charts.firstChild)charts.removeChild(charts.firstChild);
  s.ranks.forEach(function(r){charts.appendChild(chart(r));});
  var ev=document.getElementById('events');while(ev.firstChild)ev.removeChild(ev.firstChild);
  s.events.slice(-20).forEach(function(e){var rest={};Object.keys(e).forEach(function(k){if(k!=='time'&&k!=='event')rest[k]=e[k];});
    ev.appendChild(el('li',(e.time||'')+' '+(e.event||'')+' '+JSON.stringify(rest)));});
  var nodes=document.getElementById('nodes');while(nodes.firstChild)nodes.removeChild(nodes.firstChild);
  (s.nodes||[]).forEach(function(n){var li=el('li');var label='node '+n.node_rank+' ('+n.host+')';
    if(/^http:\/\/[^\s"<>]+$/.test(n.url)){var a=el('a',label);a.href=n.url+'/';li.appendChild(a);}else li.textContent=label+': no status endpoint';
    var note=(n.preflight_failed?' · pre-flight failed: '+n.preflight_failed:'')+(n.cpu_gflops>0?' · cpu '+n.cpu_gflops.toFixed(2)+' GFLOP/s a core':'')+(n.nccl_busbw_gbps>0?' · nccl '+n.nccl_busbw_gbps.toFixed(1)+' GB/s bus bandwidth':'')+(n.strikes>0?' · strikes '+n.strikes:'');
    if(note)li.appendChild(el('span',note,'muted'));nodes.appendChild(li);});
  (s.left_out||[]).forEach(function(w){nodes.appendChild(el('li','left out '+w,'failed'));});
  if(s.spare)nodes.appendChild(el('li','this node waits as a hot spare'));
}
function tick(){fetch('/status.json',{cache:'no-store'}).then(function(r){return r.json();}).then(function(s){render(s);
  document.getElementById('stale').textContent='';}).catch(function(){document.getElementById('stale').textContent='(launcher unreachable: showing the last data)';});}
setInterval(tick,1500);
})();
)";

std::string seconds(const std::optional<double>& s) { return s ? fmt::format("{:.3f} s", *s) : "-"; }

}  // namespace

std::string status_page(const report::StatusBoard& b, double now) {
  std::string rows;
  for (const report::RankStatus& r : b.ranks) {
    const std::string cls =
        std::string(r.state == report::WorkerState::kFailed ? "failed " : "") + (r.straggler ? "straggling" : "");
    rows += fmt::format(
        "<tr id=\"rank-{0}\" class=\"{1}\"><td class=\"rank\">{0}</td><td>{2}</td><td class=\"step\">{3}</td>"
        "<td class=\"step_s\">{4}</td><td class=\"progress\">{5}</td><td class=\"state\">{6}</td>"
        "<td class=\"straggler\">{7}</td></tr>\n",
        r.rank, cls, r.local_rank, r.fed ? std::to_string(r.step) : "-", seconds(r.step_s),
        r.state == report::WorkerState::kRunning ? fmt::format("{:.1f} s ago", r.since_progress_s) : "-",
        to_string(r.state), r.straggler ? "yes" : "");
  }
  std::string events;
  for (const std::string& line : b.recent_events()) {
    std::string text = line;
    while (!text.empty() && text.back() == '\n') text.pop_back();
    events += "<li>" + html_escape(text) + "</li>\n";
  }
  std::string nodes;
  for (const report::StatusBoard::Node& n : b.nodes) {
    std::string note;
    if (!n.preflight_failed.empty()) note += " · pre-flight failed: " + n.preflight_failed;
    if (n.cpu_gflops > 0) note += fmt::format(" · cpu {:.2f} GFLOP/s a core", n.cpu_gflops);
    if (n.nccl_busbw_gbps > 0) note += fmt::format(" · nccl {:.1f} GB/s bus bandwidth", n.nccl_busbw_gbps);
    if (n.strikes > 0) note += fmt::format(" · strikes {}", n.strikes);
    nodes += n.url.empty() ? fmt::format("<li>node {} ({}): no status endpoint", n.node_rank, html_escape(n.host))
                           : fmt::format("<li><a href=\"{}/\">node {} ({})</a>", html_escape(n.url), n.node_rank,
                                         html_escape(n.host));
    nodes += (note.empty() ? "" : "<span class=\"muted\">" + html_escape(note) + "</span>") + "</li>";
  }
  for (const std::string& w : b.left_out) nodes += "<li class=\"failed\">left out " + html_escape(w) + "</li>";
  if (b.spare) nodes += "<li>this node waits as a hot spare</li>";
  const std::string title = fmt::format("ddp-launch: {} ({})", b.job.program, b.job.run_id);
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>"
      "<meta name=\"viewport\" content=\"width=device-width\"><style>{style}</style></head><body>\n"
      "<h1 id=\"program\">{program}</h1>\n<div class=\"hdr\"><span>run id <b id=\"run_id\">{run_id}</b></span>"
      "<span>node <b>{node}</b> of {nnodes} ({host})</span><span>attempt <b id=\"attempt\">{attempt}</b> "
      "(max restarts {max_restarts})</span><span>world size <b id=\"world\">{world}</b></span><span>uptime "
      "<b id=\"uptime\">{uptime:.0f} s</b></span><span id=\"finished\">{finished}</span>"
      "<span id=\"stale\" class=\"muted\"></span></div>\n<p id=\"goodput\">{goodput}</p>\n"
      "<table><thead><tr><th>rank</th><th>local rank</th><th>step</th><th>step time</th><th>last progress</th>"
      "<th>state</th><th>straggler</th></tr></thead><tbody id=\"ranks\">\n{rows}</tbody></table>\n"
      "<div id=\"charts\"></div>\n<h2>Nodes</h2><ul id=\"nodes\">{nodes}</ul>\n"
      "<h2>Recent events</h2><ol id=\"events\">{events}</ol>\n"
      "<p class=\"muted\">Prometheus: <a href=\"/metrics\">/metrics</a> · JSON: <a href=\"/status.json\">/status.json</a>"
      "</p>\n<script>{script}</script></body></html>\n",
      fmt::arg("title", html_escape(title)), fmt::arg("style", kStyle), fmt::arg("program", html_escape(b.job.program)),
      fmt::arg("run_id", html_escape(b.job.run_id)), fmt::arg("node", b.job.node_rank),
      fmt::arg("nnodes", b.job.nnodes), fmt::arg("host", html_escape(b.job.host)), fmt::arg("attempt", b.attempt),
      fmt::arg("max_restarts", b.job.max_restarts), fmt::arg("world", b.world_size),
      fmt::arg("uptime", now - b.started_unix_s),
      fmt::arg("finished", b.finished ? "finished: " + html_escape(*b.finished) : "running"), fmt::arg("rows", rows),
      fmt::arg("nodes", nodes), fmt::arg("events", events), fmt::arg("script", kScript),
      fmt::arg("goodput", html_escape(report::goodput_line(b.goodput.totals(now)))));
}

}  // namespace ddp::launch::status
