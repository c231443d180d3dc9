/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What every page shares: running btrfsx, showing its figures, the
 * filesystem list, the confirmation dialog.
 *
 * The only way to the machine is BX.run(): `btrfsx --format json ARGS` as an
 * argument vector through cockpit.spawn (no shell, so "; rm -rf /" in a form
 * field is one argument btrfsx refuses), root through Cockpit's
 * administrative access (superuser "try": a session without it gets the
 * CLI's own "needs root" message). Every argument vector run is kept in
 * BX.ran, newest last, for the tests and for the curious (console).
 */
"use strict";

var BX = window.BX = {
    ran: [],
    pages: {},
};

/* Exit statuses that come with a whole document: 4 misplaced found, 5 a plan would fail. */
var DOCUMENT_EXITS = [0, 4, 5];

/*
 * The document btrfsx printed: stdout is one line of JSON. With stderr
 * joined to it (a run that streams its progress) the messages are lines of
 * their own beside it, so the line that holds the document is taken.
 */
function parseDocument(text) {
    var lines = (text || "").split("\n").filter(function (l) { return l.indexOf('{"__header"') === 0; });
    try {
        return JSON.parse(lines.length ? lines[lines.length - 1] : text);
    } catch (e) {
        return null;
    }
}

/*
 * Runs btrfsx with @args. Resolves {doc, exit, stderr} (exit 0, 4 or 5);
 * rejects with an Error whose message is the CLI's own (its JSON error
 * object, else what it wrote on stderr) and with .exit, .doc, .problem.
 * @opts.stream(line): called with each line of stderr while it runs
 * (progress lines), @opts.onproc(proc): the process, to close it.
 */
BX.run = function (args, opts) {
    opts = opts || {};
    var argv = ["btrfsx", "--format", "json"].concat(args.map(String));
    BX.ran.push(argv);
    /* A long run (it streams) does not wait for a slot, nor hold one. */
    if (opts.stream)
        return spawn(argv, opts);
    return slot().then(function (release) {
        return spawn(argv, opts).then(function (r) {
            release();
            return r;
        }, function (e) {
            release();
            throw e;
        });
    });
};

/*
 * At most RUNNING btrfsx at a time: a machine with many filesystems would
 * otherwise get a few commands per filesystem all at once on every refresh.
 */
var RUNNING = 4, running = 0, waiting = [];

function slot() {
    return new Promise(function (resolve) {
        function release() {
            running--;
            if (waiting.length)
                waiting.shift()();
        }
        function take() {
            running++;
            resolve(release);
        }
        if (running < RUNNING)
            take();
        else
            waiting.push(take);
    });
}

function spawn(argv, opts) {
    return new Promise(function (resolve, reject) {
        var options = { superuser: "try", err: opts.stream ? "out" : "message" };
        var proc = cockpit.spawn(argv, options);
        var out = "";
        if (opts.stream) {
            var pending = "";
            proc.stream(function (data) {
                pending += data;
                var lines = pending.split("\n");
                pending = lines.pop();
                lines.forEach(function (line) {
                    if (line.indexOf('{"progress"') === 0)
                        opts.stream(JSON.parse(line).progress);
                    else
                        out += line + "\n";
                });
            });
            proc.then(function () { out += pending; });
        }
        if (opts.onproc)
            opts.onproc(proc);
        proc.then(function (data, stderr) {
            var doc = parseDocument(opts.stream ? out : data);
            if (!doc)
                reject(BX.failure("btrfsx printed no JSON document", 0, null, null));
            else
                resolve({ doc: doc, exit: 0, stderr: stderr || "" });
        }, function (ex, data) {
            var doc = parseDocument(opts.stream ? out + (data || "") : data);
            var code = ex.exit_status;
            if (doc && DOCUMENT_EXITS.indexOf(code) >= 0 && !doc.error) {
                resolve({ doc: doc, exit: code, stderr: ex.message || "" });
                return;
            }
            var message = doc && doc.error ? doc.error.message : (ex.message || cockpit.message(ex));
            reject(BX.failure(message, code, doc, ex.problem || null));
        });
    });
}

BX.failure = function (message, exit, doc, problem) {
    var e = new Error(message);
    e.exit = exit;
    e.doc = doc;
    e.problem = problem;
    return e;
};

/* ---- showing figures ---- */

var IEC = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

/* Bytes for people, as btrfsx's --iec does: 1.50GiB. */
BX.size = function (bytes) {
    if (bytes === null || bytes === undefined)
        return "-";
    var v = Number(bytes), i = 0;
    var sign = v < 0 ? "-" : "";
    v = Math.abs(v);
    while (v >= 1024 && i < IEC.length - 1) {
        v /= 1024;
        i++;
    }
    return sign + (i ? v.toFixed(2) : String(v)) + IEC[i];
};

BX.duration = function (seconds) {
    if (seconds === null || seconds === undefined)
        return "unknown";
    var s = Math.round(seconds);
    if (s < 60)
        return s + "s";
    if (s < 3600)
        return Math.floor(s / 60) + "m " + (s % 60) + "s";
    if (s < 86400)
        return Math.floor(s / 3600) + "h " + Math.floor((s % 3600) / 60) + "m";
    return Math.floor(s / 86400) + "d " + Math.floor((s % 86400) / 3600) + "h";
};

BX.el = function (tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
        if (k === "text")
            e.textContent = attrs[k];
        else if (k === "class")
            e.className = attrs[k];
        else if (attrs[k] !== null && attrs[k] !== undefined && attrs[k] !== false)
            e.setAttribute(k, attrs[k] === true ? "" : attrs[k]);
    });
    (children || []).forEach(function (c) {
        if (c !== null && c !== undefined)
            e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return e;
};

/*
 * A figure: the value as the CLI gave it, where it came from (@src, the
 * command's words, and @path in its document, "free_estimated" or
 * "devices/2/size"), shown by @kind ("size", "count", "days", "text",
 * "pct", "seconds"). The test reads every .bx-fig back and compares it with
 * its own run of the same command.
 */
BX.fig = function (src, path, value, kind) {
    var text;
    kind = kind || "size";
    if (value === null || value === undefined)
        text = kind === "days" ? "never" : "-";
    else if (kind === "size")
        text = BX.size(value);
    else if (kind === "days")
        text = Number(value).toFixed(1) + " days";
    else if (kind === "pct")
        text = Number(value).toFixed(2) + " %";
    else if (kind === "seconds")
        text = BX.duration(value);
    else if (kind === "rate")
        text = BX.size(value) + "/s";
    else if (kind === "list")
        text = value.join(" ");
    else if (kind === "verdict")
        text = value ? "Possible" : "Impossible";
    else
        text = String(value);
    return BX.el("span", {
        class: "bx-fig", "data-src": src, "data-path": path,
        "data-value": JSON.stringify(value === undefined ? null : value), "data-kind": kind,
        text: text,
    });
};

/* A definition list of figures: [[label, fig], ...]. */
BX.figures = function (rows) {
    var dl = BX.el("dl", { class: "bx-figures" });
    rows.forEach(function (r) {
        dl.appendChild(BX.el("dt", { text: r[0] }));
        dl.appendChild(BX.el("dd", {}, [r[1]]));
    });
    return dl;
};

BX.message = function (kind, text) {
    return BX.el("div", { class: "bx-msg bx-" + kind, role: kind === "error" ? "alert" : "status",
                          text: text });
};

BX.clear = function (e) {
    while (e.firstChild)
        e.removeChild(e.firstChild);
    return e;
};

/* The hints' colours (the stacked bars, the badges) and their order. */
BX.HINTS = ["data_preferred", "metadata_preferred", "metadata_only", "data_only", "none"];
BX.hintColour = function (hint) {
    return {
        data_preferred: "#2b6cb0", metadata_preferred: "#b7791f", metadata_only: "#c05621",
        data_only: "#2f855a", none: "#718096",
    }[hint] || "#4a5568";
};

BX.hintBadge = function (src, path, hint) {
    var b = BX.fig(src, path, hint, "text");
    b.classList.add("bx-hint");
    b.classList.add("bx-hint-" + (hint || "unknown"));
    return b;
};

/* ---- the filesystems ---- */

/*
 * What names a filesystem to btrfsx: its mount point when mounted, else its
 * member devices (an unmounted filesystem, an image set on loop devices).
 */
BX.fsArgs = function (fs) {
    if (fs.mounted && fs.mountpoint)
        return [fs.mountpoint];
    return fs.devices.filter(function (d) { return !d.missing && d.device; })
            .map(function (d) { return d.device; });
};

BX.fsName = function (fs) {
    return (fs.label ? fs.label + " " : "") + "(" + fs.fsid.substr(0, 8) + ")" +
           (fs.mounted ? " at " + fs.mountpoint : ", not mounted");
};

/*
 * Every btrfs filesystem of the machine: `filesystem show` (all devices
 * libblkid sees). Asked again, twice at most, when it fails: block devices
 * come and go (a loop device detached while it was read), and the next
 * look usually holds together.
 */
BX.listFilesystems = function (tries) {
    tries = tries === undefined ? 2 : tries;
    return BX.run(["filesystem", "show", "--all-devices"]).then(function (r) {
        BX.filesystems = r.doc.filesystems;
        return r.doc.filesystems;
    }, function (e) {
        if (tries <= 0 || e.problem)
            throw e;
        return BX.listFilesystems(tries - 1);
    });
};

/* A <select> of the filesystems; @onchange(fs). Keeps the choice across pages. */
BX.fsSelect = function (filesystems, onchange) {
    var sel = BX.el("select", { id: "bx-fs-" + Math.random().toString(36).substr(2, 6),
                                class: "bx-fs-select", "aria-label": "Filesystem" });
    filesystems.forEach(function (fs) {
        sel.appendChild(BX.el("option", { value: fs.fsid, text: BX.fsName(fs),
                                          selected: fs.fsid === BX.chosen }));
    });
    sel.addEventListener("change", function () {
        BX.chosen = sel.value;
        onchange(BX.chosenFs());
    });
    if (!BX.chosenFs() && filesystems.length)
        BX.chosen = filesystems[0].fsid;
    return BX.el("label", { class: "bx-fs-label" }, ["Filesystem ", sel]);
};

BX.chosenFs = function () {
    return (BX.filesystems || []).filter(function (f) { return f.fsid === BX.chosen; })[0] || null;
};

/* ---- confirmation ---- */

/* Asks with Cockpit-style wording; resolves true when confirmed. */
BX.confirm = function (title, text, command) {
    var dialog = document.getElementById("bx-confirm");
    document.getElementById("bx-confirm-title").textContent = title;
    document.getElementById("bx-confirm-text").textContent = text;
    document.getElementById("bx-confirm-command").textContent = command || "";
    return new Promise(function (resolve) {
        dialog.addEventListener("close", function done() {
            dialog.removeEventListener("close", done);
            resolve(dialog.returnValue === "ok");
        });
        dialog.returnValue = "cancel";
        dialog.showModal();
        document.getElementById("bx-confirm-no").focus();
    });
};

/* The words of a command as a person would type them (for showing only). */
BX.commandLine = function (argv) {
    return argv.map(function (a) {
        return /^[\w@%+=:,./-]+$/.test(a) ? a : "'" + a.replace(/'/g, "'\\''") + "'";
    }).join(" ");
};

/*
 * Marks a page busy or settled: the tests wait for data-state="ready" with a
 * data-settled count higher than before what they did.
 */
BX.state = function (page, state) {
    page.setAttribute("data-state", state);
    if (state === "ready")
        page.setAttribute("data-settled", String(Number(page.getAttribute("data-settled") || 0) + 1));
    page.setAttribute("aria-busy", state === "loading" ? "true" : "false");
};
