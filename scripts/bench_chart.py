"""A line chart in SVG for bench/RESULTS.md (scripts/bench_report.py): one
figure of the wrk runs over the number of connections, one line per server
variant. No plotting library: the bench runs on a bare machine."""
import math


def line_chart(path, title, ylabel, series, conns, value, colors, names, logy):
    """Writes an SVG line chart of value(group, variant, conns) over conns (log x axis),
    one line per (group, variant) of series: shared groups dashed."""
    W, H, L, R, T, B = 760, 460 + 36 * max(0, len(series) - 10), 80, 250, 40, 60
    pw, ph = W - L - R, H - T - B
    vals = [value(g, v, c) for g, v in series for c in conns if value(g, v, c)]
    if not vals or not conns:
        return
    if logy:
        lo = 10 ** math.floor(math.log10(max(min(vals), 1e-3)))
        hi = 10 ** math.ceil(math.log10(max(vals)))
        ticks = []
        t = lo
        while t <= hi * 1.0001:
            ticks.append(t)
            t *= 10
        fy = lambda y: T + ph - (math.log10(max(y, lo)) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * ph
    else:
        lo, top = 0.0, max(vals) * 1.1
        step = 10 ** math.floor(math.log10(top))
        if top / step < 3:
            step /= 5 if top / step < 1.5 else 2
        hi = math.ceil(top / step) * step
        ticks = [i * step for i in range(int(round(hi / step)) + 1)]
        fy = lambda y: T + ph - (y - lo) / (hi - lo) * ph
    xs = conns
    lx0, lx1 = math.log10(xs[0]), math.log10(xs[-1]) if len(xs) > 1 else math.log10(xs[0]) + 1
    fx = lambda x: L + (math.log10(x) - lx0) / ((lx1 - lx0) or 1) * pw
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{L + pw / 2}" y="22" text-anchor="middle" font-size="15">{title}</text>',
         f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>']
    for t in ticks:
        y = fy(t)
        lab = f"{t:,.0f}" if t >= 1 else f"{t:g}"
        if not logy and hi >= 10000:
            lab = f"{t / 1000:,.0f}k"
        o.append(f'<line x1="{L}" x2="{L + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e4e4e4"/>')
        o.append(f'<text x="{L - 6}" y="{y + 4:.1f}" text-anchor="end">{lab}</text>')
    for x in xs:
        o.append(f'<line x1="{fx(x):.1f}" x2="{fx(x):.1f}" y1="{T}" y2="{T + ph}" stroke="#e4e4e4"/>')
        o.append(f'<text x="{fx(x):.1f}" y="{T + ph + 18}" text-anchor="middle">{x:,}</text>')
    o.append(f'<text x="{L + pw / 2}" y="{H - 18}" text-anchor="middle">concurrent keep-alive connections (log scale)</text>')
    o.append(f'<text transform="translate(18,{T + ph / 2}) rotate(-90)" text-anchor="middle">{ylabel}</text>')
    ly = T + 10
    for g, v in series:
        pts = [(fx(c), fy(value(g, v, c))) for c in xs if value(g, v, c)]
        dash = ' stroke-dasharray="6,4"' if g == "shared" else ""
        if pts:
            o.append(f'<polyline fill="none" stroke="{colors[v]}" stroke-width="2"{dash} points="'
                     + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>')
            for x, y in pts:
                o.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colors[v]}"/>')
        o.append(f'<line x1="{L + pw + 12}" x2="{L + pw + 40}" y1="{ly}" y2="{ly}" stroke="{colors[v]}" stroke-width="2"{dash}/>')
        name = names[v]
        o.append(f'<text x="{L + pw + 46}" y="{ly + 4}">{name}</text>')
        o.append(f'<text x="{L + pw + 46}" y="{ly + 18}" fill="#666" font-size="10">'
                 f'{"server 1 CPU, wrk 1 CPU" if g == "pinned" else "all CPUs shared"}</text>')
        ly += 36
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")
