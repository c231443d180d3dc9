/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The charts, drawn with Debian's d3 (libjs-d3, 3.x) as SVG: each series is
 * an element with class bx-series and data-series naming it, each point of
 * a line a circle of class bx-point, so what is drawn can be counted. The
 * charts draw the CLI's figures; they compute none.
 */
"use strict";

BX.charts = {};

/*
 * One stacked bar per device: @devices [{devid, device, hint, size,
 * segments: [{label, bytes, type, path}], free: {bytes, path}}]; the bar's
 * colour is the device's hint's, its segments' shade the chunk type's.
 */
BX.charts.deviceBars = function (parent, devices, src) {
    var width = 640, rowHeight = 26, labelWidth = 150;
    var max = d3.max(devices, function (d) { return d.size; }) || 1;
    var x = d3.scale.linear().domain([0, max]).range([0, width - labelWidth - 10]);
    var svg = d3.select(parent).append("svg")
            .attr("class", "bx-chart bx-bars")
            .attr("viewBox", "0 0 " + width + " " + (devices.length * rowHeight + 4))
            .attr("role", "img")
            .attr("aria-label", "Bytes per chunk type and profile on each device");
    var shade = { data: 0.9, metadata: 0.6, system: 0.35 };
    var row = svg.selectAll("g.bx-series").data(devices).enter().append("g")
            .attr("class", "bx-series")
            .attr("data-series", function (d) { return "devid " + d.devid; })
            .attr("transform", function (d, i) { return "translate(0," + (i * rowHeight + 2) + ")"; });
    row.append("text").attr("x", 0).attr("y", 16).attr("class", "bx-bar-label")
            .text(function (d) { return d.devid + " " + (d.device || "missing"); });
    row.each(function (d) {
        var g = d3.select(this), at = labelWidth;
        var colour = BX.hintColour(d.hint);
        d.segments.forEach(function (s) {
            var w = x(s.bytes);
            g.append("rect").attr("class", "bx-segment")
                    .attr("data-path", s.path).attr("data-src", src)
                    .attr("data-bytes", s.bytes)
                    .attr("x", at).attr("y", 3).attr("width", w).attr("height", rowHeight - 8)
                    .attr("fill", colour).attr("fill-opacity", shade[s.type] || 0.5)
                    .append("title").text(s.label + ": " + BX.size(s.bytes));
            at += w;
        });
        g.append("rect").attr("class", "bx-segment bx-free")
                .attr("data-path", d.free.path).attr("data-src", src)
                .attr("data-bytes", d.free.bytes)
                .attr("x", at).attr("y", 3).attr("width", x(d.free.bytes)).attr("height", rowHeight - 8)
                .attr("fill", "#ffffff").attr("stroke", colour)
                .append("title").text("unallocated: " + BX.size(d.free.bytes));
        g.append("rect").attr("class", "bx-bar-frame")
                .attr("x", labelWidth).attr("y", 3).attr("width", x(d.size))
                .attr("height", rowHeight - 8).attr("fill", "none").attr("stroke", colour)
                .attr("stroke-width", 2);
    });
    return svg.node();
};

/*
 * A trend: @points [{time, value}] (the monitor's samples), and when the
 * report projects, the line from @now's @left to 0 after @days and the
 * 95 % band between @low and @high days (@high null: it never runs out at
 * the slowest pace, the band reaches the edge).
 */
BX.charts.trend = function (parent, title, points, projection) {
    var width = 560, height = 220, m = { l: 70, r: 10, t: 24, b: 30 };
    var times = points.map(function (p) { return p.time; });
    var end = times.length ? d3.max(times) : 0;
    var horizon = null;
    if (projection && projection.days !== null) {
        var far = projection.high !== null ? projection.high : projection.days * 2;
        horizon = projection.now + far * 86400;
        end = Math.max(end, horizon);
    } else if (projection) {
        end = Math.max(end, projection.now);
    }
    var start = times.length ? d3.min(times) : end - 86400;
    if (end <= start)
        end = start + 86400;
    var top = d3.max(points, function (p) { return p.value; }) || 1;
    var x = d3.time.scale().domain([new Date(start * 1000), new Date(end * 1000)])
            .range([m.l, width - m.r]);
    var y = d3.scale.linear().domain([0, top * 1.05]).range([height - m.b, m.t]);
    var svg = d3.select(parent).append("svg").attr("class", "bx-chart bx-trend")
            .attr("viewBox", "0 0 " + width + " " + height).attr("role", "img")
            .attr("aria-label", title);
    svg.append("text").attr("x", m.l).attr("y", 14).attr("class", "bx-chart-title").text(title);
    svg.append("g").attr("class", "bx-axis").attr("transform", "translate(0," + (height - m.b) + ")")
            .call(d3.svg.axis().scale(x).orient("bottom").ticks(5));
    svg.append("g").attr("class", "bx-axis").attr("transform", "translate(" + m.l + ",0)")
            .call(d3.svg.axis().scale(y).orient("left").ticks(4).tickFormat(BX.size));
    var tx = function (t) { return x(new Date(t * 1000)); };
    if (projection && projection.days !== null) {
        var lowEnd = projection.now + projection.low * 86400;
        var highEnd = projection.high !== null ? projection.now + projection.high * 86400 : end;
        var band = [[tx(projection.now), y(projection.left)], [tx(lowEnd), y(0)],
            [tx(highEnd), projection.high !== null ? y(0) : y(projection.left)]];
        svg.append("path").attr("class", "bx-series bx-band").attr("data-series", "band")
                .attr("d", "M" + band.map(function (p) { return p.join(","); }).join("L") + "Z");
        svg.append("path").attr("class", "bx-series bx-projection").attr("data-series", "projection")
                .attr("d", d3.svg.line()([[tx(projection.now), y(projection.left)],
                    [tx(projection.now + projection.days * 86400), y(0)]]));
    }
    var line = d3.svg.line().x(function (p) { return tx(p.time); })
            .y(function (p) { return y(p.value); });
    var g = svg.append("g").attr("class", "bx-series bx-samples").attr("data-series", "samples");
    g.append("path").attr("class", "bx-line").attr("d", line(points));
    g.selectAll("circle").data(points).enter().append("circle").attr("class", "bx-point")
            .attr("cx", function (p) { return tx(p.time); })
            .attr("cy", function (p) { return y(p.value); }).attr("r", 2.5)
            .attr("data-value", function (p) { return p.value; })
            .attr("data-time", function (p) { return p.time; });
    return svg.node();
};
