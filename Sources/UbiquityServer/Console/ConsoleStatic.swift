// SPDX-License-Identifier: Apache-2.0

/// The Console's script, served at `/console/static/console.js` (its styles are in the Drive's
/// sheet): the container switcher goes on change, and the request log page follows new
/// requests by a long poll of `logs/live` (each answer comes when the container is called).
enum ConsoleStatic {
    static let script = """
        "use strict";
        (function () {
          const switcher = document.querySelector("form[data-switch] select");
          if (switcher) {
            switcher.addEventListener("change", () => {
              window.location.href = "/console/" + encodeURIComponent(switcher.value) + "/records";
            });
          }
          const live = document.getElementById("live-log");
          const rows = document.getElementById("log-rows");
          if (!live || !rows) return;
          let after = Number(live.dataset.after || 0);
          function cell(text, code) {
            const td = document.createElement("td");
            const inner = code ? document.createElement("code") : td;
            inner.textContent = text;
            if (code) td.appendChild(inner);
            return td;
          }
          function add(entry) {
            const tr = document.createElement("tr");
            if (entry.failed) tr.className = "failed";
            const time = document.createElement("td");
            const stamp = document.createElement("time");
            stamp.dateTime = entry.time;
            stamp.textContent = entry.clock;
            time.appendChild(stamp);
            tr.appendChild(time);
            for (const key of ["operation", "environment", "database", "status", "latency"]) tr.appendChild(cell(String(entry[key])));
            tr.appendChild(cell(entry.errorCode || ""));
            tr.appendChild(cell(entry.requestID, true));
            rows.insertBefore(tr, rows.firstChild);
            while (rows.children.length > 500) rows.removeChild(rows.lastChild);
          }
          async function follow() {
            for (;;) {
              try {
                const response = await fetch(live.dataset.live + "?after=" + after, { credentials: "same-origin", cache: "no-store" });
                if (!response.ok) return;
                const answer = await response.json();
                const entries = answer.entries || [];
                for (const entry of entries.slice().reverse()) {
                  add(entry);
                  after = Math.max(after, entry.sequence);
                }
                if (entries.length) {
                  const empty = document.getElementById("log-empty");
                  if (empty) empty.remove();
                }
              } catch (error) {
                await new Promise((resolve) => setTimeout(resolve, 5000));
              }
            }
          }
          follow();
        })();
        """
}
