/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What-if: a form for the planner's changes (add, remove, resize, replace,
 * convert, hint), run as `filesystem plan` with the fields as they were
 * typed, each one argument: a size, devid or profile btrfsx does not take
 * comes back as its own message and nothing else runs. Shows before and
 * after side by side, the verdict with its reasons, what must move and how
 * long (the plan's copy rate), and the command that makes each change. The
 * page never makes a device change itself.
 */
"use strict";

(function () {
    var page, form, changesBox, result, fsBox;
    var PROFILES = ["single", "dup", "raid0", "raid1", "raid1c3", "raid1c4", "raid10", "raid5", "raid6"];
    /* Each change: its fields and how they make the option's value. */
    var KINDS = {
        add: { label: "Add a device", fields: ["size", "hint?"],
               value: function (v) { return v.size + (v.hint ? ":" + v.hint : ""); } },
        remove: { label: "Remove a device", fields: ["devid"], value: function (v) { return v.devid; } },
        resize: { label: "Resize a device", fields: ["devid", "size"],
                  value: function (v) { return v.devid + "=" + v.size; } },
        replace: { label: "Replace a device", fields: ["devid", "size", "hint?"],
                   value: function (v) { return v.devid + "=" + v.size + (v.hint ? ":" + v.hint : ""); } },
        convert: { label: "Convert a profile", fields: ["kind", "profile"],
                   value: function (v) { return v.kind + "=" + v.profile; } },
        hint: { label: "Set a hint", fields: ["devid", "hint"], value: function (v) { return v.devid + "=" + v.hint; } },
    };
    var rowCount = 0;

    function field(name, id) {
        var optional = name.endsWith("?");
        var key = optional ? name.slice(0, -1) : name;
        var input;
        if (key === "hint") {
            input = BX.el("select", { id: id, "data-field": key },
                [BX.el("option", { value: "", text: optional ? "(none)" : "choose" })].concat(
                    BX.HINTS.map(function (h) { return BX.el("option", { value: h, text: h }); })));
        } else if (key === "kind") {
            input = BX.el("select", { id: id, "data-field": key },
                ["data", "metadata"].map(function (k) { return BX.el("option", { value: k, text: k }); }));
        } else if (key === "profile") {
            /* free text with suggestions: what btrfsx refuses is its to say */
            input = BX.el("input", { id: id, "data-field": key, list: "bx-profiles", size: 9 });
        } else {
            input = BX.el("input", { id: id, "data-field": key, size: key === "size" ? 8 : 4,
                                     placeholder: key === "size" ? "e.g. 64G" : "devid" });
        }
        return BX.el("label", { class: "bx-field" }, [key + " ", input]);
    }

    function addRow(kind) {
        var n = ++rowCount;
        var row = BX.el("fieldset", { class: "bx-change", "data-kind": kind });
        row.appendChild(BX.el("legend", { text: KINDS[kind].label }));
        KINDS[kind].fields.forEach(function (f) {
            row.appendChild(field(f, "bx-whatif-" + n + "-" + f.replace("?", "")));
        });
        var remove = BX.el("button", { type: "button", class: "bx-small", text: "Remove",
                                       "aria-label": "Remove this change" });
        remove.addEventListener("click", function () { row.remove(); });
        row.appendChild(remove);
        changesBox.appendChild(row);
        row.querySelector("input, select").focus();
    }

    /* The plan's arguments from the form, the fields exactly as typed. */
    function planArgs() {
        var args = [];
        changesBox.querySelectorAll(".bx-change").forEach(function (row) {
            var kind = row.getAttribute("data-kind"), v = {};
            row.querySelectorAll("[data-field]").forEach(function (i) {
                v[i.getAttribute("data-field")] = i.value;
            });
            args.push("--" + kind, KINDS[kind].value(v));
        });
        return args;
    }

    function sideBySide(doc, src) {
        var keys = [["free_estimated", "Free (model)"], ["free_strict", "Free (strict)"],
            ["metadata_room", "Metadata room"], ["metadata_room_after_data", "Metadata after data"],
            ["device_size", "Device size"], ["device_allocated", "Allocated"], ["used", "Used"]];
        var table = BX.el("table", { class: "bx-table bx-sides" });
        table.appendChild(BX.el("thead", {}, [BX.el("tr", {}, ["", "Before", "After"].map(function (h) {
            return BX.el("th", { scope: "col", text: h });
        }))]));
        var body = BX.el("tbody");
        keys.forEach(function (k) {
            body.appendChild(BX.el("tr", {}, [BX.el("th", { scope: "row", text: k[1] }),
                BX.el("td", {}, [BX.fig(src, "before/" + k[0], doc.before[k[0]])]),
                BX.el("td", {}, [BX.fig(src, "after/" + k[0], doc.after[k[0]])])]));
        });
        ["data_profile", "metadata_profile"].forEach(function (k) {
            body.appendChild(BX.el("tr", {}, [BX.el("th", { scope: "row", text: k.replace("_", " ") }),
                BX.el("td", {}, [BX.fig(src, "before/" + k, doc.before[k], "text")]),
                BX.el("td", {}, [BX.fig(src, "after/" + k, doc.after[k], "text")])]));
        });
        table.appendChild(body);
        return table;
    }

    function devices(doc, src) {
        var ids = [];
        doc.before.devices.concat(doc.after.devices).forEach(function (d) {
            if (ids.indexOf(d.devid) < 0)
                ids.push(d.devid);
        });
        var table = BX.el("table", { class: "bx-table bx-devices" });
        var head = ["Devid", "Hint", "Size", "Unallocated", "Data", "Metadata", "System"];
        table.appendChild(BX.el("thead", {}, [
            BX.el("tr", {}, [BX.el("th", { text: "" }), BX.el("th", { colspan: 6, text: "Before" }),
                BX.el("th", { colspan: 6, text: "After" })]),
            BX.el("tr", {}, head.concat(head.slice(1)).map(function (h) { return BX.el("th", { scope: "col", text: h }); }))]));
        var body = BX.el("tbody");
        ids.sort(function (a, b) { return a - b; }).forEach(function (id) {
            var cells = [BX.el("th", { scope: "row", text: String(id) })];
            ["before", "after"].forEach(function (side) {
                var i = doc[side].devices.findIndex(function (d) { return d.devid === id; });
                if (i < 0) {
                    cells.push(BX.el("td", { colspan: 6, class: "bx-none", text: side === "before" ? "new" : "removed" }));
                    return;
                }
                var d = doc[side].devices[i], p = side + "/devices/" + i + "/";
                cells.push(BX.el("td", {}, [BX.hintBadge(src, p + "hint", d.hint)]));
                ["size", "unallocated", "data", "metadata", "system"].forEach(function (k) {
                    cells.push(BX.el("td", {}, [BX.fig(src, p + k, d[k])]));
                });
            });
            body.appendChild(BX.el("tr", {}, cells));
        });
        table.appendChild(body);
        return BX.el("div", { class: "bx-scroll" }, [table]);
    }

    function changes(doc, src) {
        var list = BX.el("ol", { class: "bx-steps" });
        doc.changes.forEach(function (c, i) {
            var p = "changes/" + i + "/";
            var item = BX.el("li", { "data-status": c.status }, [
                BX.el("strong", {}, [BX.fig(src, p + "description", c.description, "text")]), ": ",
                BX.fig(src, p + "status", c.status, "text"), c.tight ? " (tight)" : "",
                BX.el("br"), "moves ", BX.fig(src, p + "moved_chunks", c.moved_chunks, "count"), " chunks (",
                BX.fig(src, p + "moved_bytes", c.moved_bytes), " used), ",
                BX.fig(src, p + "new_chunks", c.new_chunks, "count"), " new chunks, copies ",
                BX.fig(src, p + "copied_bytes", c.copied_bytes), "; takes ",
                BX.fig(src, p + "estimate_seconds", c.estimate_seconds, "seconds"),
                c.estimate_seconds === null ? " (no relocation measured here yet)" : "",
            ]);
            if (c.reason)
                item.appendChild(BX.message("error", c.reason));
            c.short.forEach(function (s, k) {
                item.appendChild(BX.el("p", { class: "bx-short" }, [s.type + " " + s.profile + " short by ",
                    BX.fig(src, p + "short/" + k + "/missing_bytes", s.missing_bytes)]));
            });
            item.appendChild(BX.el("pre", { class: "bx-command" }, [BX.fig(src, p + "command", c.command, "text")]));
            list.appendChild(item);
        });
        return list;
    }

    function render(doc, src) {
        BX.clear(result);
        var verdict = BX.el("p", { class: "bx-verdict " + (doc.possible ? "bx-ok" : "bx-bad"),
                                   "data-possible": String(doc.possible) }, [
            BX.fig(src, "possible", doc.possible, "verdict"), doc.possible ?
                ": every change can be made" : ": a change would fail (the kernel's ENOSPC or a refusal), see its reason"]);
        result.appendChild(BX.el("h3", { text: "The plan" }));
        result.appendChild(verdict);
        result.appendChild(changes(doc, src));
        if (doc.misplaced) {
            result.appendChild(BX.el("p", {}, ["Misplaced chunks after the plan: ",
                BX.fig(src, "misplaced/chunks", doc.misplaced.chunks, "count")]));
        }
        result.appendChild(BX.el("h3", { text: "Before and after" }));
        result.appendChild(sideBySide(doc, src));
        result.appendChild(devices(doc, src));
        result.appendChild(BX.el("p", { class: "bx-note", text: "The page changes nothing: run the commands above yourself, in order, when the plan suits you." }));
    }

    function plan(event) {
        event.preventDefault();
        var fs = BX.chosenFs();
        if (!fs)
            return;
        var args = ["filesystem", "plan"].concat(BX.fsArgs(fs), planArgs());
        var src = args.join(" ");
        BX.state(page, "loading");
        BX.clear(result).appendChild(BX.message("info", "Planning..."));
        result.setAttribute("data-src", src);
        BX.run(args).then(function (r) {
            render(r.doc, src);
        }).catch(function (e) {
            BX.clear(result).appendChild(BX.message("error", e.message));
        }).then(function () { BX.state(page, "ready"); });
    }

    BX.pages.whatif = {
        init: function (el) {
            page = el;
            page.appendChild(BX.el("p", { text: "What a change would leave behind, before making it: the planner's figures, exact to the allocator model. Nothing is changed here." }));
            fsBox = BX.el("div", { class: "bx-toolbar" });
            page.appendChild(fsBox);
            page.appendChild(BX.el("datalist", { id: "bx-profiles" }, PROFILES.map(function (p) {
                return BX.el("option", { value: p });
            })));
            form = BX.el("form", { id: "bx-whatif-form" });
            var adders = BX.el("div", { class: "bx-adders", role: "group", "aria-label": "Add a change" });
            Object.keys(KINDS).forEach(function (k) {
                var b = BX.el("button", { type: "button", id: "bx-whatif-add-" + k, text: "+ " + KINDS[k].label });
                b.addEventListener("click", function () { addRow(k); });
                adders.appendChild(b);
            });
            changesBox = BX.el("div", { class: "bx-changes" });
            form.appendChild(adders);
            form.appendChild(changesBox);
            form.appendChild(BX.el("button", { type: "submit", id: "bx-whatif-plan", class: "bx-primary", text: "Plan" }));
            form.addEventListener("submit", plan);
            page.appendChild(form);
            result = BX.el("div", { id: "bx-whatif-result", "aria-live": "polite" });
            page.appendChild(result);
        },
        show: function () {
            BX.state(page, "loading");
            BX.listFilesystems().then(function (filesystems) {
                BX.clear(fsBox).appendChild(BX.fsSelect(filesystems, function () { BX.clear(result); }));
            }).catch(function (e) {
                BX.clear(fsBox).appendChild(BX.message("error", e.message));
            }).then(function () { BX.state(page, "ready"); });
        },
    };
})();
