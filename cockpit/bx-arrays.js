/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Arrays: every btrfs filesystem of the machine, mounted or not. Per
 * filesystem `filesystem usage` (per device size, hint, bytes per type and
 * profile, free space by the model and strict, metadata room),
 * `filesystem misplaced`, and when mounted `read-policy get` and
 * `device io-stats` (how reads were shared over a second, and the kernel's
 * error counters). A filesystem that goes away while the page is open is
 * shown as gone, once; the next refresh does not ask for it again.
 */
"use strict";

(function () {
    var REFRESH_SECONDS = 30;
    var page, list, known = {}, timer = null, generation = 0;

    function usageSection(fs, doc, src) {
        var box = BX.el("div", { class: "bx-usage" });
        box.appendChild(BX.figures([
            ["Free (model)", BX.fig(src, "free_estimated", doc.free_estimated)],
            ["Free (strict)", BX.fig(src, "free_strict", doc.free_strict)],
            ["Free (statfs, df)", BX.fig(src, "free_statfs", doc.free_statfs)],
            ["Metadata room", BX.fig(src, "metadata_room", doc.metadata_room)],
            ["Metadata after data", BX.fig(src, "metadata_room_after_data", doc.metadata_room_after_data)],
            ["Device size", BX.fig(src, "overall/device_size", doc.overall.device_size)],
            ["Used", BX.fig(src, "overall/used", doc.overall.used)],
        ]));
        var devices = doc.devices.map(function (d, i) {
            return {
                devid: d.devid, device: d.device, hint: d.hint, size: d.size,
                segments: d.allocations.map(function (a, k) {
                    return { label: a.type + "," + a.profile, bytes: a.size, type: a.type,
                             path: "devices/" + i + "/allocations/" + k + "/size" };
                }),
                free: { bytes: d.unallocated, path: "devices/" + i + "/unallocated" },
            };
        });
        var chart = BX.el("div", { class: "bx-chart-box" });
        box.appendChild(chart);
        BX.charts.deviceBars(chart, devices, src);
        box.appendChild(legend());
        var table = BX.el("table", { class: "bx-table" });
        table.appendChild(BX.el("thead", {}, [BX.el("tr", {}, ["Devid", "Device", "Hint", "Size",
            "Allocated", "Unallocated", "Data can take", "Metadata can take"].map(function (h) {
            return BX.el("th", { scope: "col", text: h });
        }))]));
        var body = BX.el("tbody");
        doc.devices.forEach(function (d, i) {
            var p = "devices/" + i + "/";
            var allocs = BX.el("ul", { class: "bx-allocs" }, d.allocations.map(function (a, k) {
                return BX.el("li", {}, [a.type + "," + a.profile + " ",
                    BX.fig(src, p + "allocations/" + k + "/size", a.size)]);
            }));
            body.appendChild(BX.el("tr", {}, [
                BX.el("td", {}, [BX.fig(src, p + "devid", d.devid, "count")]),
                BX.el("td", {}, [BX.fig(src, p + "device", d.device, "text")]),
                BX.el("td", {}, [BX.hintBadge(src, p + "hint", d.hint)]),
                BX.el("td", {}, [BX.fig(src, p + "size", d.size)]),
                BX.el("td", {}, [allocs]),
                BX.el("td", {}, [BX.fig(src, p + "unallocated", d.unallocated)]),
                BX.el("td", {}, [BX.fig(src, p + "data_allocatable", d.data_allocatable)]),
                BX.el("td", {}, [BX.fig(src, p + "metadata_allocatable", d.metadata_allocatable)]),
            ]));
        });
        table.appendChild(body);
        box.appendChild(BX.el("div", { class: "bx-scroll" }, [table]));
        return box;
    }

    function legend() {
        return BX.el("p", { class: "bx-legend" }, BX.HINTS.map(function (h) {
            return BX.el("span", { class: "bx-hint bx-hint-" + h, text: h });
        }).concat([BX.el("span", { class: "bx-legend-note",
            text: " bar colour: the device's hint; darkest data, then metadata, then system; white: unallocated" })]));
    }

    function misplacedSection(doc, src) {
        var m = doc.misplaced;
        return BX.el("div", { class: "bx-misplaced" }, [BX.el("h4", { text: "Misplaced chunks" }),
            BX.figures([
                ["Forbidden", BX.el("span", {}, [BX.fig(src, "misplaced/forbidden/chunks", m.forbidden.chunks, "count"),
                    " chunks, ", BX.fig(src, "misplaced/forbidden/used", m.forbidden.used), " used"])],
                ["Off preference", BX.el("span", {}, [BX.fig(src, "misplaced/off_preference/chunks", m.off_preference.chunks, "count"),
                    " chunks, ", BX.fig(src, "misplaced/off_preference/used", m.off_preference.used), " used"])],
                ["Hints honoured by this kernel", BX.fig(src, "misplaced/hints_effective", m.hints_effective, "text")],
            ])]);
    }

    function readsSection(policy, stats, psrc, ssrc) {
        var box = BX.el("div", { class: "bx-reads" }, [BX.el("h4", { text: "Read policy and reads" })]);
        if (policy) {
            box.appendChild(BX.figures([
                ["Read policy", BX.fig(psrc, "policy", policy.policy, "text")],
                ["Choices", BX.fig(psrc, "available", policy.available, "list")],
                ["Kept across mounts", BX.fig(psrc, "persistent", policy.persistent, "text")],
                ["Affects reads here", BX.fig(psrc, "affects_reads", policy.affects_reads, "text")],
            ]));
        }
        if (!stats)
            return box;
        var sample = stats.samples[stats.samples.length - 1];
        var si = stats.samples.length - 1;
        var table = BX.el("table", { class: "bx-table" });
        table.appendChild(BX.el("thead", {}, [BX.el("tr", {}, ["Devid", "Reads (last second)",
            "Share", "write_io_errs", "read_io_errs", "flush_io_errs", "corruption_errs",
            "generation_errs"].map(function (h) { return BX.el("th", { scope: "col", text: h }); }))]));
        var body = BX.el("tbody");
        sample.devices.forEach(function (d, i) {
            var e = stats.errors[i];
            var p = "samples/" + si + "/devices/" + i + "/";
            body.appendChild(BX.el("tr", {}, [
                BX.el("td", {}, [BX.fig(ssrc, p + "devid", d.devid, "count")]),
                BX.el("td", {}, [BX.fig(ssrc, p + "reads", d.reads, "count")]),
                BX.el("td", {}, [BX.fig(ssrc, p + "reads_pct", d.reads_pct, "pct")]),
            ].concat(["write_io_errs", "read_io_errs", "flush_io_errs", "corruption_errs",
                "generation_errs"].map(function (k) {
                var f = BX.fig(ssrc, "errors/" + i + "/" + k, e[k], "count");
                if (e[k])
                    f.classList.add("bx-bad");
                return BX.el("td", {}, [f]);
            }))));
        });
        table.appendChild(body);
        box.appendChild(BX.el("div", { class: "bx-scroll" }, [table]));
        return box;
    }

    function section(card, run, render) {
        var slot = BX.el("div", { class: "bx-slot" }, [BX.message("info", "Reading...")]);
        card.appendChild(slot);
        return run().then(function (r) {
            BX.clear(slot).appendChild(render(r.doc));
        }, function (e) {
            BX.clear(slot).appendChild(BX.message("error", e.message));
            throw e;
        });
    }

    /* One filesystem's card, filled from its commands; rejects when one failed. */
    function fillCard(card, fs) {
        var args = BX.fsArgs(fs);
        var src = function (words) { return words.concat(args).join(" "); };
        BX.clear(card);
        card.setAttribute("data-fsid", fs.fsid);
        card.setAttribute("data-args", JSON.stringify(args));
        card.appendChild(BX.el("h3", { text: BX.fsName(fs) }));
        card.appendChild(BX.el("p", { class: "bx-sub" }, [
            "fsid ", BX.fig("filesystem show --all-devices", "filesystems/fsid=" + fs.fsid + "/fsid", fs.fsid, "text"),
            ", ", BX.fig("filesystem show --all-devices", "filesystems/fsid=" + fs.fsid + "/num_devices", fs.num_devices, "count"),
            " devices, ", fs.mounted ? "mounted at " + fs.mountpoint : "not mounted (read from its devices)"]));
        var jobs = [
            section(card, function () { return BX.run(["filesystem", "usage"].concat(args)); },
                    function (doc) { return usageSection(fs, doc, src(["filesystem", "usage"])); }),
            section(card, function () { return BX.run(["filesystem", "misplaced"].concat(args)); },
                    function (doc) { return misplacedSection(doc, src(["filesystem", "misplaced"])); }),
        ];
        if (fs.mounted) {
            var mnt = fs.mountpoint;
            jobs.push(Promise.all([
                BX.run(["read-policy", "get", mnt]),
                BX.run(["device", "io-stats", "-i", "1", mnt]),
            ]).then(function (r) {
                card.appendChild(readsSection(r[0].doc, r[1].doc, "read-policy get " + mnt,
                                              "device io-stats -i 1 " + mnt));
            }, function (e) {
                card.appendChild(BX.message("error", e.message));
                throw e;
            }));
        } else {
            card.appendChild(BX.message("info", "Not mounted: the read policy and the kernel's error counters exist only while it is mounted."));
        }
        return Promise.all(jobs);
    }

    function markGone(card, fs) {
        BX.clear(card);
        card.classList.add("bx-gone");
        card.setAttribute("data-gone", "true");
        card.appendChild(BX.el("h3", { text: BX.fsName(fs) }));
        card.appendChild(BX.message("warning", "Gone: this filesystem is no longer on any device btrfsx sees (unmounted and its devices detached, or removed)."));
    }

    function sameState(a, b) {
        return a && b && a.mounted === b.mounted && a.mountpoint === b.mountpoint &&
               JSON.stringify(BX.fsArgs(a)) === JSON.stringify(BX.fsArgs(b));
    }

    /*
     * Lists the filesystems and (re)draws the cards whose state changed; a
     * failure of one filesystem's commands is looked at once more through
     * the list: gone or unmounted meanwhile is shown as such, not as an error.
     */
    function refresh(force) {
        var mine = ++generation;
        BX.state(page, "loading");
        return BX.listFilesystems().then(function (filesystems) {
            var jobs = [];
            var present = {};
            filesystems.forEach(function (fs) {
                present[fs.fsid] = fs;
                var entry = known[fs.fsid];
                if (entry && !force && sameState(entry.fs, fs) && !entry.failed)
                    return;
                if (!entry) {
                    entry = known[fs.fsid] = { card: BX.el("article", { class: "bx-card" }) };
                    list.appendChild(entry.card);
                }
                entry.fs = fs;
                entry.card.classList.remove("bx-gone");
                entry.card.removeAttribute("data-gone");
                jobs.push(fillCard(entry.card, fs).then(function () { entry.failed = false; },
                                                        function () { entry.failed = true; }));
            });
            Object.keys(known).forEach(function (fsid) {
                if (!present[fsid] && !known[fsid].gone) {
                    known[fsid].gone = true;
                    markGone(known[fsid].card, known[fsid].fs);
                }
            });
            if (!filesystems.length && !Object.keys(known).length)
                list.appendChild(BX.message("info", "No btrfs filesystem on this machine."));
            return Promise.all(jobs).then(function () {
                var failed = Object.keys(known).filter(function (k) { return known[k].failed; });
                if (!failed.length)
                    return null;
                /* Did they fail because they went away? One look, then settle. */
                return BX.listFilesystems().then(function (again) {
                    var now = {};
                    again.forEach(function (f) { now[f.fsid] = f; });
                    failed.forEach(function (fsid) {
                        var entry = known[fsid];
                        if (!now[fsid]) {
                            entry.gone = true;
                            entry.failed = false;
                            markGone(entry.card, entry.fs);
                        } else if (!sameState(entry.fs, now[fsid])) {
                            entry.fs = now[fsid];
                            return fillCard(entry.card, now[fsid]).then(function () { entry.failed = false; }, function () {});
                        }
                    });
                });
            });
        }).catch(function (e) {
            list.appendChild(BX.message("error", e.message));
        }).then(function () {
            if (mine === generation)
                BX.state(page, "ready");
        });
    }

    BX.pages.arrays = {
        init: function (el) {
            page = el;
            var button = BX.el("button", { type: "button", id: "bx-arrays-refresh", text: "Refresh" });
            button.addEventListener("click", function () { refresh(true); });
            page.appendChild(BX.el("div", { class: "bx-toolbar" }, [
                BX.el("p", { text: "Every btrfs filesystem on this machine, as btrfsx sees it. Which are there and mounted is checked every " + REFRESH_SECONDS + " s; Refresh reads every figure again." }),
                button]));
            list = BX.el("div", { class: "bx-cards" });
            page.appendChild(list);
        },
        show: function () {
            refresh(true);
            if (!timer)
                timer = window.setInterval(function () {
                    if (!page.hidden && page.getAttribute("data-state") !== "loading")
                        refresh(false);
                }, REFRESH_SECONDS * 1000);
        },
        refresh: refresh,
    };
})();
