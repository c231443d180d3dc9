/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Scrub: the last offline scrub's result per device (`scrub status
 * --offline -d <device>`). An offline scrub reads the devices of an
 * unmounted filesystem; the page does not start one: it says so, and shows
 * the command.
 */
"use strict";

(function () {
    var page, fsBox, body;
    var COUNTERS = ["data_bytes_scrubbed", "tree_bytes_scrubbed", "read_errors", "csum_errors",
        "verify_errors", "super_errors", "corrected_errors", "uncorrectable_errors"];

    function render(fs) {
        BX.clear(body);
        var devs = fs.devices.filter(function (d) { return !d.missing; }).map(function (d) { return d.device; });
        var start = ["btrfsx", "scrub", "start", "--offline", "-B", "-d"].concat(devs);
        body.appendChild(BX.el("div", { class: "bx-card" }, [BX.el("h3", { text: "Starting one" }),
            BX.message(fs.mounted ? "warning" : "info", fs.mounted ?
                "The offline scrub needs the filesystem unmounted (it reads and repairs the devices itself). Unmount " + fs.mountpoint + ", then run:" :
                "The filesystem is not mounted: an offline scrub can run now, from a terminal as root:"),
            BX.el("pre", { class: "bx-command", id: "bx-scrub-command", text: BX.commandLine(start) }),
            BX.el("p", { class: "bx-note", text: "-r only reads (no repair); --metadata-only checks the trees alone. The page does not start it: a scrub of a large array takes hours and holds the devices." })]));
        var result = BX.el("div", { class: "bx-card", id: "bx-scrub-last" }, [BX.el("h3", { text: "The last offline scrub" })]);
        body.appendChild(result);
        if (!devs.length)
            return Promise.resolve();
        var argv = ["scrub", "status", "--offline", "-d", devs[0]];
        var src = argv.join(" ");
        return BX.run(argv).then(function (r) {
            var s = r.doc.scrub;
            result.appendChild(BX.figures([
                ["Status", BX.fig(src, "scrub/status", s.status, "text")],
                ["Mode", BX.fig(src, "scrub/mode", s.mode, "text")],
                ["Started", BX.fig(src, "scrub/started", s.started, "text")],
                ["Took", BX.fig(src, "scrub/duration", s.duration, "seconds")],
                ["Scrubbed", BX.fig(src, "scrub/bytes_scrubbed", s.bytes_scrubbed)],
                ["Uncorrectable", BX.fig(src, "scrub/total/uncorrectable_errors", s.total.uncorrectable_errors, "count")],
            ]));
            var table = BX.el("table", { class: "bx-table" });
            table.appendChild(BX.el("thead", {}, [BX.el("tr", {}, ["Devid", "Device"].concat(COUNTERS).map(function (h) {
                return BX.el("th", { scope: "col", text: h.replace(/_/g, " ") });
            }))]));
            var tb = BX.el("tbody");
            s.devices.forEach(function (d, i) {
                var p = "scrub/devices/" + i + "/";
                tb.appendChild(BX.el("tr", {}, [BX.el("td", {}, [BX.fig(src, p + "devid", d.devid, "count")]),
                    BX.el("td", {}, [BX.fig(src, p + "device", d.device, "text")])].concat(COUNTERS.map(function (k) {
                    var f = BX.fig(src, p + k, d[k], k.indexOf("bytes") >= 0 ? "size" : "count");
                    if (k.indexOf("errors") >= 0 && d[k] && k !== "corrected_errors")
                        f.classList.add("bx-bad");
                    return BX.el("td", {}, [f]);
                }))));
            });
            table.appendChild(tb);
            result.appendChild(BX.el("div", { class: "bx-scroll" }, [table]));
        }, function (e) {
            result.appendChild(BX.message("info", e.message));
        });
    }

    function show() {
        BX.state(page, "loading");
        BX.listFilesystems().then(function (filesystems) {
            BX.clear(fsBox).appendChild(BX.fsSelect(filesystems, function (fs) {
                BX.state(page, "loading");
                render(fs).then(function () { BX.state(page, "ready"); });
            }));
            var fs = BX.chosenFs();
            return fs ? render(fs) : null;
        }).catch(function (e) {
            BX.clear(body).appendChild(BX.message("error", e.message));
        }).then(function () { BX.state(page, "ready"); });
    }

    BX.pages.scrub = {
        init: function (el) {
            page = el;
            page.appendChild(BX.el("p", { text: "btrfsx's offline scrub verifies every copy of every block of an unmounted filesystem and repairs bad copies from good ones." }));
            fsBox = BX.el("div", { class: "bx-toolbar" });
            body = BX.el("div", { class: "bx-cards" });
            page.appendChild(fsBox);
            page.appendChild(body);
        },
        show: show,
    };
})();
