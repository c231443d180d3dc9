/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The page's frame: the tabs (buttons in a tablist: Tab reaches them, Enter
 * and Space choose, the arrow keys move between them), the page in the
 * location (#/trend ...), so each page has an address Cockpit keeps.
 */
"use strict";

document.addEventListener("DOMContentLoaded", function () {
    var tabs = Array.prototype.slice.call(document.querySelectorAll(".bx-tabs [role=tab]"));
    var current = null;

    Object.keys(BX.pages).forEach(function (name) {
        BX.pages[name].init(document.getElementById("page-" + name));
    });

    function choose(name) {
        if (!BX.pages[name])
            name = "arrays";
        tabs.forEach(function (t) {
            var on = t.getAttribute("data-page") === name;
            t.setAttribute("aria-selected", String(on));
            t.tabIndex = on ? 0 : -1;
            document.getElementById("page-" + t.getAttribute("data-page")).hidden = !on;
        });
        if (current !== name) {
            current = name;
            BX.pages[name].show();
        }
    }

    tabs.forEach(function (t, i) {
        t.addEventListener("click", function () { cockpit.location.go([t.getAttribute("data-page")]); });
        t.addEventListener("keydown", function (ev) {
            var next = ev.key === "ArrowRight" ? i + 1 : ev.key === "ArrowLeft" ? i - 1 : null;
            if (next === null)
                return;
            ev.preventDefault();
            var to = tabs[(next + tabs.length) % tabs.length];
            to.focus();
            to.click();
        });
    });
    cockpit.addEventListener("locationchanged", function () { choose(cockpit.location.path[0]); });
    choose(cockpit.location.path[0]);
});
