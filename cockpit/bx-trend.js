/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Trend: the monitor's history (`monitor report --samples`): per filesystem
 * the metadata room above the global reserve and the data free space over
 * the window, the fitted pace, and the days left with their 95 % range,
 * drawn as a projection to zero with its band. A learning or stale
 * filesystem is shown as such, with the report's reason, and nothing is
 * projected. The figures are the report's; "now" is the report's (its
 * newest sample plus that sample's age).
 */
"use strict";

(function () {
    var page, body;
    var SRC = "monitor report --samples";

    function paceText(src, path, doc, key) {
        return BX.el("span", {}, [BX.fig(src, path + key, doc[key]), "/day (95 %: ",
            BX.fig(src, path + key + "_low", doc[key + "_low"]), " to ",
            BX.fig(src, path + key + "_high", doc[key + "_high"]), ")"]);
    }

    function daysText(src, path, doc, key) {
        return BX.el("span", { class: "bx-days" }, [BX.fig(src, path + key, doc[key], "days"),
            " (95 %: ", BX.fig(src, path + key + "_low", doc[key + "_low"], "days"), " to ",
            BX.fig(src, path + key + "_high", doc[key + "_high"], "days"), ")"]);
    }

    function card(f, i) {
        var path = "filesystems/" + i + "/";
        var c = BX.el("article", { class: "bx-card", "data-fsid": f.fsid });
        c.appendChild(BX.el("h3", { text: (f.label || "(no label)") + " " + (f.mountpoint || "") }));
        var state = f.stale ? "stale" : f.learning ? "learning" : "projected";
        c.setAttribute("data-trend-state", state);
        c.appendChild(BX.el("p", { class: "bx-sub" }, ["Status ", BX.fig(SRC, path + "status", f.status, "text"),
            ", ", BX.fig(SRC, path + "samples", f.samples, "count"), " samples",
            f.stale ? ", stale: no recent sample (unmounted, or the recorder is not running)" : "",
            f.learning ? ", learning: the pace is told once the history is long enough" : ""]));
        if (f.reason)
            c.appendChild(BX.message(f.stale ? "warning" : "info", f.reason));
        if (f.metadata_left === undefined)
            return c;
        var projected = f.metadata_days_left !== undefined;
        var rows = [
            ["Metadata left (above the global reserve)", BX.fig(SRC, path + "metadata_left", f.metadata_left)],
            ["Data free (model)", BX.fig(SRC, path + "data_left", f.data_left)],
        ];
        if (projected) {
            rows.push(["Metadata: days left", daysText(SRC, path, f, "metadata_days_left")]);
            rows.push(["Metadata grows", paceText(SRC, path, f, "metadata_growth_per_day")]);
            rows.push(["Data: days left", daysText(SRC, path, f, "data_days_left")]);
            rows.push(["Data grows", paceText(SRC, path, f, "data_growth_per_day")]);
        } else if (f.learning) {
            rows.push(["Metadata growth seen", BX.fig(SRC, path + "metadata_growth_seen", f.metadata_growth_seen)]);
            rows.push(["Data growth seen", BX.fig(SRC, path + "data_growth_seen", f.data_growth_seen)]);
            rows.push(["A burst", BX.fig(SRC, path + "burst", f.burst, "text")]);
        }
        c.appendChild(BX.figures(rows));
        var now = f.last_sample + f.sample_age;
        var series = f.series || [];
        var charts = BX.el("div", { class: "bx-charts" });
        c.appendChild(charts);
        [["metadata", "Metadata left", "metadata_left", "metadata_days_left"],
            ["data", "Data free", "data_left", "data_days_left"]].forEach(function (k) {
            var box = BX.el("div", { class: "bx-chart-box", "data-chart": k[0] });
            charts.appendChild(box);
            var projection = projected && !f.stale ? {
                now: now, left: f[k[2]], days: f[k[3]], low: f[k[3] + "_low"],
                high: f[k[3] + "_high"] } : null;
            if (projection && projection.days === null)
                projection = { now: now, left: f[k[2]], days: null };
            BX.charts.trend(box, k[1], series.map(function (s) {
                return { time: s.time, value: s[k[2]] };
            }), projection);
        });
        return c;
    }

    function refresh() {
        BX.state(page, "loading");
        BX.clear(body).appendChild(BX.message("info", "Reading the history..."));
        return BX.run(["monitor", "report", "--samples"]).then(function (r) {
            BX.clear(body);
            if (!r.doc.filesystems.length)
                body.appendChild(BX.message("info", "The history holds no filesystem yet: enable the monitor's timer (systemctl enable --now btrfsx-monitor.timer) or run btrfsx monitor record."));
            r.doc.filesystems.forEach(function (f, i) { body.appendChild(card(f, i)); });
        }).catch(function (e) {
            BX.clear(body).appendChild(BX.message("error", e.message));
        }).then(function () { BX.state(page, "ready"); });
    }

    BX.pages.trend = {
        init: function (el) {
            page = el;
            var button = BX.el("button", { type: "button", id: "bx-trend-refresh", text: "Refresh" });
            button.addEventListener("click", refresh);
            page.appendChild(BX.el("div", { class: "bx-toolbar" }, [BX.el("p", {
                text: "From the monitor's history: what is left for metadata and for data, how fast it goes, and when it runs out (the line) with its 95 % range (the band)." }), button]));
            body = BX.el("div", { class: "bx-cards" });
            page.appendChild(body);
        },
        show: refresh,
    };
})();
