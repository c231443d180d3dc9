/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Actions: what btrfsx owns and the page may run, each behind a
 * confirmation that says what will happen, each refused with the CLI's own
 * message where the CLI refuses:
 *  - an allocation hint (`device property set <dev> allocation_hint <hint>`:
 *    online through the kernel where it honours hints, else refused; offline
 *    on an unmounted filesystem);
 *  - the read policy (`read-policy set [--persistent] <mnt> <policy>`);
 *  - `balance misplaced` with its progress (the JSON progress lines), a
 *    pause and a cancel;
 *  - `maintain plan` and `maintain run`: what keeping the array healthy
 *    would move and why, then the run with the same progress, pause and
 *    cancel.
 *
 * Each action is an entry of ACTIONS: {id, title, render(fs, box)}; its
 * render() uses BX.run() for a check and runLong() below for a long run,
 * which shows the progress lines, pauses and cancels.
 */
"use strict";

(function () {
    var page, fsBox, body;

    function refusal(box, e) {
        var m = BX.message("error", e.message);
        m.classList.add("bx-refusal");
        box.appendChild(m);
    }

    function done(box, text) {
        box.appendChild(BX.message("success", text));
    }

    /* ---- allocation hints ---- */

    function renderHints(fs, box) {
        var table = BX.el("table", { class: "bx-table" });
        table.appendChild(BX.el("thead", {}, [BX.el("tr", {}, ["Devid", "Device", "Hint now", "New hint", ""].map(function (h) {
            return BX.el("th", { scope: "col", text: h });
        }))]));
        var tbody = BX.el("tbody");
        var out = BX.el("div", { class: "bx-out", "aria-live": "polite" });
        fs.devices.filter(function (d) { return !d.missing; }).forEach(function (d) {
            var sel = BX.el("select", { id: "bx-hint-" + d.devid, "aria-label": "New hint for devid " + d.devid },
                BX.HINTS.map(function (h) { return BX.el("option", { value: h, text: h, selected: h === d.hint }); }));
            var button = BX.el("button", { type: "button", id: "bx-hint-set-" + d.devid, text: "Set" });
            var now = BX.el("td", {}, [BX.hintBadge("filesystem show --all-devices",
                                                    "filesystems/fsid=" + fs.fsid + "/devices/devid=" + d.devid + "/hint", d.hint)]);
            button.addEventListener("click", function () {
                var argv = ["device", "property", "set", d.device, "allocation_hint", sel.value];
                var how = fs.mounted ?
                    "The filesystem is mounted: the hint is set through the kernel (sysfs), which refuses it where the running kernel ignores hints." :
                    "The filesystem is not mounted: the hint is written to the device item in every superblock copy and the chunk tree, crash-safe.";
                BX.confirm("Set the allocation hint of devid " + d.devid + " to " + sel.value + "?",
                           how + " New chunks are placed by it; chunks already there stay until moved.",
                           BX.commandLine(["btrfsx"].concat(argv))).then(function (yes) {
                    if (!yes)
                        return;
                    BX.clear(out);
                    BX.state(page, "loading");
                    BX.run(argv, { superuser: "require" }).then(function (r) {
                        done(out, "devid " + d.devid + ": " + (r.doc.previous || "") + " -> " + r.doc.allocation_hint);
                        d.hint = r.doc.allocation_hint;
                        BX.clear(now).appendChild(BX.hintBadge("device property set", "allocation_hint", d.hint));
                    }).catch(function (e) { refusal(out, e); }).then(function () { BX.state(page, "ready"); });
                });
            });
            tbody.appendChild(BX.el("tr", {}, [BX.el("td", { text: String(d.devid) }), BX.el("td", { text: d.device }),
                now, BX.el("td", {}, [sel]), BX.el("td", {}, [button])]));
        });
        table.appendChild(tbody);
        box.appendChild(BX.el("div", { class: "bx-scroll" }, [table]));
        box.appendChild(out);
    }

    /* ---- read policy ---- */

    function renderReadPolicy(fs, box) {
        if (!fs.mounted) {
            box.appendChild(BX.message("info", "Not mounted: the read policy is the kernel's, set on a mounted filesystem (a recorded one is applied at mount)."));
            return;
        }
        var out = BX.el("div", { class: "bx-out", "aria-live": "polite" });
        BX.run(["read-policy", "get", fs.mountpoint]).then(function (r) {
            var doc = r.doc, src = "read-policy get " + fs.mountpoint;
            var sel = BX.el("select", { id: "bx-rp-policy", "aria-label": "Read policy" },
                doc.available.map(function (p) { return BX.el("option", { value: p, text: p, selected: p === doc.policy }); }));
            var persist = BX.el("input", { type: "checkbox", id: "bx-rp-persist", checked: true });
            var button = BX.el("button", { type: "button", id: "bx-rp-set", text: "Switch" });
            box.appendChild(BX.figures([["Now", BX.fig(src, "policy", doc.policy, "text")],
                ["Kept across mounts", BX.fig(src, "persistent", doc.persistent, "text")],
                ["Affects reads here", BX.fig(src, "affects_reads", doc.affects_reads, "text")]]));
            box.appendChild(BX.el("div", { class: "bx-row" }, [BX.el("label", {}, ["Policy ", sel]),
                BX.el("label", {}, [persist, " keep it across mounts"]), button]));
            box.appendChild(out);
            button.addEventListener("click", function () {
                var argv = ["read-policy", "set"].concat(persist.checked ? ["--persistent"] : [], [fs.mountpoint, sel.value]);
                BX.confirm("Switch the read policy to " + sel.value + "?",
                           "Which copy serves reads of RAID1-family chunks changes now" +
                           (persist.checked ? ", and the policy is recorded for this filesystem and applied again at every mount." : "; it resets at the next mount."),
                           BX.commandLine(["btrfsx"].concat(argv))).then(function (yes) {
                    if (!yes)
                        return;
                    BX.clear(out);
                    BX.state(page, "loading");
                    BX.run(argv, { superuser: "require" }).then(function (res) {
                        done(out, "read policy " + res.doc.previous + " -> " + res.doc.policy +
                             (res.doc.persistent ? ", recorded" : ""));
                    }).catch(function (e) { refusal(out, e); }).then(function () { BX.state(page, "ready"); });
                });
            });
        }).catch(function (e) { refusal(box, e); });
    }

    /* ---- a long run: progress lines, pause and cancel ---- */

    /* Exit 6: a maintain run stopped before its target; its document still comes. */
    var EXIT_STOPPED = 6;

    /*
     * The run's own object in a long run's document: balance misplaced's or
     * maintain run's (a cancelled balance's comes with its error too).
     */
    function runResult(doc) {
        return doc ? doc.balance || doc.maintain : null;
    }

    /*
     * Runs @argv with --progress, showing each progress line in @box.
     * Pause and Cancel both end the run through the CLI's clean stop (the
     * end of its input, --cancel-on-eof, as SIGTERM: balance misplaced puts
     * the chunk being moved back whole, maintain run finishes it first; the
     * run's document still comes); after a pause, Resume checks again and
     * runs what is left. @onend(r): r.doc the document, r.result its run
     * object, r.stopped "paused", "cancelled" or null.
     */
    function runLong(argv, box, onend) {
        var bar = BX.el("progress", { id: "bx-progress", max: 1, value: 0 });
        var line = BX.el("p", { id: "bx-progress-text", "aria-live": "polite", text: "Starting..." });
        var pause = BX.el("button", { type: "button", id: "bx-run-pause", text: "Pause" });
        var cancel = BX.el("button", { type: "button", id: "bx-run-cancel", text: "Cancel" });
        var controls = BX.el("div", { class: "bx-row" }, [pause, cancel]);
        var proc = null, stopping = null;
        BX.clear(box).appendChild(bar);
        box.appendChild(line);
        box.appendChild(controls);
        box.setAttribute("data-run", "running");
        /* The end of its input cancels the run (--cancel-on-eof); its output still comes. */
        function stop(how) {
            stopping = how;
            pause.disabled = cancel.disabled = true;
            if (proc)
                proc.input(null);
        }
        pause.addEventListener("click", function () { stop("paused"); });
        cancel.addEventListener("click", function () { stop("cancelled"); });
        return BX.run(argv.concat(["--progress", "--cancel-on-eof"]), {
            superuser: "require",
            onproc: function (p) { proc = p; },
            stream: function (p) {
                bar.max = p.bytes_total || 1;
                bar.value = p.bytes_done;
                box.setAttribute("data-chunks-done", p.chunks_done);
                BX.clear(line).appendChild(BX.el("span", {}, ["moved ",
                    BX.fig("progress", "chunks_done", p.chunks_done, "count"), " of ",
                    BX.fig("progress", "chunks_total", p.chunks_total, "count"), " chunks, ",
                    BX.fig("progress", "bytes_done", p.bytes_done), " of ",
                    BX.fig("progress", "bytes_total", p.bytes_total),
                    p.current ? ", moving the chunk at " + p.current : "",
                    p.pausing ? ", waiting between chunks" : ""]));
                box.setAttribute("data-pausing", String(p.pausing));
            },
        }).then(function (r) {
            return { doc: r.doc, result: runResult(r.doc), stopped: null };
        }, function (e) {
            if (runResult(e.doc) && (stopping || e.exit === EXIT_STOPPED))
                return { doc: e.doc, result: runResult(e.doc), stopped: stopping };
            throw e;
        }).then(function (r) {
            controls.remove();
            box.setAttribute("data-run", r.stopped || r.result.status);
            onend(r);
            return r;
        }, function (e) {
            controls.remove();
            box.setAttribute("data-run", "failed");
            refusal(box, e);
        });
    }

    /*
     * After a confirmation (@title, @text, the command line), runs @argv
     * through runLong() in a new box #@runId of @out; @onend(r, box).
     */
    function confirmAndRun(title, text, argv, out, runId, onend) {
        BX.confirm(title, text, BX.commandLine(["btrfsx"].concat(argv))).then(function (yes) {
            if (!yes)
                return;
            var run = BX.el("div", { class: "bx-run", id: runId });
            BX.clear(out).appendChild(run);
            BX.state(page, "running");
            runLong(argv, run, function (r) { onend(r, run); }).then(function () { BX.state(page, "ready"); });
        });
    }

    /*
     * A check before a long run: @argv's document handed to @show(doc),
     * which fills @out; a refusal shown there instead.
     */
    function runCheck(out, argv, show) {
        BX.clear(out).appendChild(BX.message("info", "Checking..."));
        BX.state(page, "loading");
        return BX.run(argv).then(function (r) {
            BX.clear(out);
            show(r.doc);
        }).catch(function (e) {
            BX.clear(out);
            refusal(out, e);
        }).then(function () { BX.state(page, "ready"); });
    }

    /* A finished run's status and what it moved (@at: the run object's path in its document). */
    function runMoved(src, at, r) {
        var res = r.result;
        return [
            ["Status", BX.fig(src, at + "status", r.stopped || res.status, "text")],
            ["Moved", BX.el("span", {}, [BX.fig(src, at + "chunks_moved", res.chunks_moved, "count"), " chunks, ",
                BX.fig(src, at + "bytes_moved", res.bytes_moved)])],
        ];
    }

    /* The button that starts the run a check found work for. */
    function startButton(id, onclick) {
        var go = BX.el("button", { type: "button", id: id, class: "bx-primary", text: "Move them" });
        go.addEventListener("click", onclick);
        return go;
    }

    /* ---- balance misplaced ---- */

    function renderBalance(fs, box) {
        if (!fs.mounted) {
            box.appendChild(BX.message("info", "Not mounted: chunks are moved by the kernel's balance, on a mounted filesystem."));
            return;
        }
        var mnt = fs.mountpoint;
        var force = BX.el("input", { type: "checkbox", id: "bx-bal-force" });
        var pauseBetween = BX.el("input", { id: "bx-bal-pause", size: 4, placeholder: "0s" });
        var check = BX.el("button", { type: "button", id: "bx-bal-check", text: "Check what would move" });
        var out = BX.el("div", { class: "bx-out", id: "bx-bal-out", "aria-live": "polite" });
        box.appendChild(BX.el("div", { class: "bx-row" }, [check,
            BX.el("label", {}, ["wait between chunks ", pauseBetween]),
            BX.el("label", { title: "Only where the running kernel ignores allocation hints: the chunks move, but the kernel places them by its own rules; the run stops at the first chunk placed no better." },
                      [force, " move even though this kernel ignores hints (--force)"])]));
        box.appendChild(out);
        function options() {
            return (force.checked ? ["--force"] : []).concat(pauseBetween.value ? ["--pause", pauseBetween.value] : []);
        }
        function start(args, plan) {
            var argv = ["balance", "misplaced"].concat(args, [mnt]);
            confirmAndRun("Move " + plan.chunks_planned + " misplaced chunks?",
                          "Moves " + plan.chunks_planned + " chunks (" + BX.size(plan.bytes_planned) + " used), one kernel balance of one chunk at a time, to where the hints want them. The devices are busy meanwhile. Pause or Cancel puts the chunk being moved back whole.",
                          argv, out, "bx-bal-run", function (r, run) {
                var b = r.result, src = "balance";
                run.appendChild(BX.figures(runMoved(src, "", r).concat([
                    ["Still misplaced", BX.el("span", {}, [BX.fig(src, "remaining_chunks", b.remaining_chunks, "count"), " chunks"])],
                ])));
                if (b.reason)
                    run.appendChild(BX.message(r.stopped ? "info" : "warning", b.reason));
                if (r.stopped === "paused" && b.remaining_chunks) {
                    var resume = BX.el("button", { type: "button", id: "bx-run-resume", text: "Resume" });
                    resume.addEventListener("click", function () { dryRun(); });
                    run.appendChild(BX.el("p", {}, ["Paused. Resume checks again and goes on with what is still misplaced. ", resume]));
                }
            });
        }
        function dryRun() {
            var args = options();
            runCheck(out, ["balance", "misplaced", "--dry-run"].concat(args, [mnt]), function (doc) {
                var b = doc.balance, src = "balance misplaced --dry-run " + args.concat([mnt]).join(" ");
                out.appendChild(BX.figures([
                    ["Would move", BX.el("span", {}, [BX.fig(src, "balance/chunks_planned", b.chunks_planned, "count"),
                        " chunks, ", BX.fig(src, "balance/bytes_planned", b.bytes_planned), " used"])],
                    ["Status", BX.fig(src, "balance/status", b.status, "text")],
                ]));
                if (b.refused) {
                    refusal(out, new Error(b.refused));
                    return;
                }
                if (!b.chunks_planned) {
                    done(out, "Nothing is misplaced: every chunk is where the hints want it.");
                    return;
                }
                out.appendChild(startButton("bx-bal-start", function () { start(args, b); }));
            });
        }
        check.addEventListener("click", dryRun);
    }

    /* ---- maintain ---- */

    /* The plan's chunks: why each moves, which, its used bytes and time, as the CLI gives them. */
    function maintainActions(src, m) {
        var table = BX.el("table", { class: "bx-table", id: "bx-mnt-actions" });
        table.appendChild(BX.el("thead", {}, [BX.el("tr", {}, ["Reason", "Chunk", "Type", "Used", "Time"].map(function (h) {
            return BX.el("th", { scope: "col", text: h });
        }))]));
        var tbody = BX.el("tbody");
        m.actions.forEach(function (a, i) {
            var at = "maintain/actions/" + i + "/";
            tbody.appendChild(BX.el("tr", {}, [
                BX.el("td", {}, [BX.fig(src, at + "reason", a.reason, "text")]),
                BX.el("td", {}, [BX.fig(src, at + "logical", a.logical, "count")]),
                BX.el("td", {}, [BX.fig(src, at + "type", a.type, "text"), " ",
                                 BX.fig(src, at + "profile", a.profile, "text")]),
                BX.el("td", {}, [BX.fig(src, at + "used", a.used)]),
                BX.el("td", {}, [BX.fig(src, at + "seconds", a.seconds, "seconds")]),
            ]));
        });
        table.appendChild(tbody);
        return BX.el("div", { class: "bx-scroll" }, [table]);
    }

    /* Days left: the CLI's null is "no pace known" (or none consumed), not "never runs out". */
    function daysLeft(src, path, days) {
        return days === null ? BX.el("span", {}, [BX.fig(src, path, days, "text"), " (no pace known)"])
                             : BX.fig(src, path, days, "days");
    }

    /* Metadata room, days left and misplaced chunks of a state (before, after, final). */
    function maintainState(src, key, st) {
        var at = "maintain/" + key + "/";
        return [
            ["Metadata room", BX.fig(src, at + "metadata_room", st.metadata_room)],
            ["Days left", daysLeft(src, at + "days_left", st.days_left)],
            ["Misplaced chunks", BX.fig(src, at + "misplaced", st.misplaced, "count")],
        ];
    }

    function renderMaintain(fs, box) {
        if (!fs.mounted) {
            box.appendChild(BX.message("info", "Not mounted: maintain moves chunks through the kernel's balance, on a mounted filesystem."));
            return;
        }
        var mnt = fs.mountpoint;
        var check = BX.el("button", { type: "button", id: "bx-mnt-check", text: "Check" });
        var out = BX.el("div", { class: "bx-out", id: "bx-mnt-out", "aria-live": "polite" });
        box.appendChild(BX.el("p", { text: "Keeps metadata room above the policy's target and chunks where the hints want them, moving the fewest bytes. Check says what a run would move now, and why." }));
        box.appendChild(BX.el("div", { class: "bx-row" }, [check]));
        box.appendChild(out);
        function start(m) {
            var argv = ["maintain", "run", mnt];
            confirmAndRun("Move " + m.chunks_planned + " chunks to keep " + mnt + " healthy?",
                       "Moves " + m.chunks_planned + " chunks (" + BX.size(m.bytes_planned) + " used" +
                       (m.seconds_planned === null ? "" : ", about " + BX.duration(m.seconds_planned)) +
                       "), one kernel balance of one chunk at a time, within the policy's budget and quiet hours; " +
                       "metadata room goes from " + BX.size(m.before.metadata_room) + " to " + BX.size(m.after.metadata_room) +
                       " (predicted), misplaced chunks from " + m.before.misplaced + " to " + m.after.misplaced +
                       ". The devices are busy meanwhile. Pause or Cancel stops after the chunk moving now; the next run goes on.",
                       argv, out, "bx-mnt-run", function (r, run) {
                var f = r.result, src = "maintain run";
                run.appendChild(BX.figures(runMoved(src, "maintain/", r).concat(maintainState(src, "final", f.final))));
                if (f.reason)
                    run.appendChild(BX.message(r.stopped ? "info" : f.status === "target-met" ? "success" : "warning", f.reason));
                if (r.stopped === "paused" && !f.target_met) {
                    var resume = BX.el("button", { type: "button", id: "bx-run-resume", text: "Resume" });
                    resume.addEventListener("click", function () { plan(); });
                    run.appendChild(BX.el("p", {}, ["Paused. Resume checks again and goes on with what is left. ", resume]));
                }
            });
        }
        function plan() {
            runCheck(out, ["maintain", "plan", mnt], function (doc) {
                var m = doc.maintain, src = "maintain plan " + mnt;
                var view = out.appendChild(BX.el("div", { class: "bx-mnt-plan", id: "bx-mnt-plan" }));
                view.appendChild(BX.figures([
                    ["Status", BX.fig(src, "maintain/status", m.status, "text")],
                    ["Target room", BX.el("span", {}, [BX.fig(src, "maintain/target", m.target), " (",
                        BX.fig(src, "maintain/target_why", m.target_why, "text"), ")"])],
                    ["Would move", BX.el("span", {}, [BX.fig(src, "maintain/chunks_planned", m.chunks_planned, "count"),
                        " chunks, ", BX.fig(src, "maintain/bytes_planned", m.bytes_planned), " used"])],
                    ["Time", BX.el("span", {}, [BX.fig(src, "maintain/seconds_planned", m.seconds_planned, "seconds"),
                        m.seconds_planned === null ? " (no copy rate measured yet)" : " at the measured copy rate"])],
                ]));
                if (m.actions.length)
                    view.appendChild(maintainActions(src, m));
                var states = BX.el("div", { class: "bx-row" }, [
                    BX.el("div", {}, [BX.el("h4", { text: "Now" }), BX.figures(maintainState(src, "before", m.before))]),
                    BX.el("div", {}, [BX.el("h4", { text: "After (predicted)" }), BX.figures(maintainState(src, "after", m.after))]),
                ]);
                view.appendChild(states);
                if (m.status === "cannot-meet") {
                    var cannot = BX.message("warning", m.reason);
                    cannot.id = "bx-mnt-cannot";
                    view.appendChild(cannot);
                    view.appendChild(BX.figures([["Add a device of at least", BX.fig(src, "maintain/device_needed", m.device_needed)]]));
                }
                if (m.refused) {
                    refusal(view, new Error(m.refused));
                    return;
                }
                if (!m.chunks_planned) {
                    if (m.status === "nothing-to-do")
                        done(view, "Nothing to do: the target is met.");
                    return;
                }
                view.appendChild(startButton("bx-mnt-start", function () { start(m); }));
            });
        }
        check.addEventListener("click", plan);
    }

    var ACTIONS = [
        { id: "hints", title: "Allocation hints", render: renderHints },
        { id: "read-policy", title: "Read policy", render: renderReadPolicy },
        { id: "balance", title: "Move misplaced chunks (balance misplaced)", render: renderBalance },
        { id: "maintain", title: "Keep the array healthy (maintain)", render: renderMaintain },
    ];

    /* The filesystems read again, then their actions drawn. */
    function reload() {
        BX.state(page, "loading");
        return BX.listFilesystems().then(show).catch(function (e) {
            BX.clear(body).appendChild(BX.message("error", e.message));
        }).then(function () { BX.state(page, "ready"); });
    }

    function show() {
        var filesystems = BX.filesystems || [];
        BX.clear(fsBox).appendChild(BX.fsSelect(filesystems, reload));
        BX.clear(body);
        var fs = BX.chosenFs();
        if (!fs) {
            body.appendChild(BX.message("info", "No btrfs filesystem on this machine."));
            return;
        }
        ACTIONS.forEach(function (a) {
            var box = BX.el("section", { class: "bx-card bx-action", id: "bx-action-" + a.id },
                            [BX.el("h3", { text: a.title })]);
            body.appendChild(box);
            a.render(fs, box);
        });
    }

    BX.pages.actions = {
        init: function (el) {
            page = el;
            page.appendChild(BX.el("p", { text: "What btrfsx changes, after you confirm. Where btrfsx refuses, its own message says why." }));
            fsBox = BX.el("div", { class: "bx-toolbar" });
            body = BX.el("div", { class: "bx-cards" });
            page.appendChild(fsBox);
            page.appendChild(body);
        },
        show: reload,
    };
})();
