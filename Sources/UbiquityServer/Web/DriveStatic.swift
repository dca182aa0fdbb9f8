// SPDX-License-Identifier: Apache-2.0

/// The Drive's style sheet (the Console's too) and script, served at `/drive/static/…` (no build
/// step, no npm).
enum DriveStatic {
    static let css = """
        :root { color-scheme: light dark; --accent: #0a66d8; --line: #d0d4da; --muted: #667; --danger: #b3261e; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
        .top { display: flex; align-items: center; justify-content: space-between; gap: 1rem; padding: .6rem 1.2rem;
               border-bottom: 1px solid var(--line); }
        .brand { font-weight: 650; text-decoration: none; color: inherit; font-size: 1.1rem; }
        nav a { margin-right: 1rem; color: var(--accent); }
        main { padding: 1rem 1.2rem; max-width: 1100px; margin: 0 auto; }
        .card { border: 1px solid var(--line); border-radius: 10px; padding: 1.2rem 1.5rem; }
        .narrow { max-width: 380px; margin: 3rem auto; }
        .narrow label { display: block; margin-top: .7rem; }
        .narrow input { width: 100%; padding: .45rem; margin-top: .2rem; }
        .narrow button { margin-top: 1rem; width: 100%; }
        button, .button { font: inherit; padding: .3rem .8rem; border-radius: 6px; border: 1px solid var(--line);
                          background: var(--accent); color: white; cursor: pointer; display: inline-block; }
        button.link { background: none; color: var(--accent); border: none; padding: 0; }
        button.danger { background: var(--danger); }
        input { font: inherit; padding: .25rem .4rem; border: 1px solid var(--line); border-radius: 5px; }
        .inline { display: inline; margin: 0 .3rem 0 0; }
        .toolbar { display: flex; flex-wrap: wrap; gap: .6rem; align-items: center; margin: .8rem 0; }
        .hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
        .hidden-input { position: absolute; width: 1px; height: 1px; opacity: 0; }
        .drop { border: 2px dashed var(--line); border-radius: 10px; padding: 1rem; text-align: center; color: var(--muted); }
        .drop.over { border-color: var(--accent); color: var(--accent); }
        .progress { list-style: none; padding: 0; }
        .progress progress { width: 14rem; vertical-align: middle; }
        table.items { width: 100%; border-collapse: collapse; margin-top: .8rem; }
        table.items caption { text-align: left; color: var(--muted); padding: .3rem 0; }
        table.items th, table.items td { text-align: left; padding: .45rem .4rem; border-bottom: 1px solid var(--line); vertical-align: middle; }
        td.actions { white-space: nowrap; }
        .icon { display: inline-block; width: .95em; height: .8em; margin-right: .35em; vertical-align: -.05em; border-radius: 2px; }
        .folder-icon { background: #f2b84b; }
        .file-icon { border: 1.5px solid #8a94a3; height: 1em; width: .8em; }
        .crumbs { margin: .4rem 0; }
        .muted { color: var(--muted); }
        .error { color: var(--danger); }
        .notice { background: #eef5ff; color: #0b3d7a; padding: .5rem .8rem; border-radius: 6px; }
        .pages a { margin-right: 1rem; }
        input.wide { width: 100%; margin: .4rem 0; }
        .sections { display: flex; flex-wrap: wrap; gap: 1rem; align-items: center; padding: .4rem 1.2rem; border-bottom: 1px solid var(--line); }
        .sections a.current { font-weight: 650; text-decoration: none; color: inherit; }
        .filters { display: flex; flex-wrap: wrap; gap: .6rem 1rem; align-items: end; margin: .8rem 0; }
        .filters label { display: flex; flex-direction: column; font-size: .85rem; color: var(--muted); }
        select { font: inherit; padding: .2rem .3rem; border: 1px solid var(--line); border-radius: 5px; }
        dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
        dl.facts dt { color: var(--muted); }
        dl.facts dd { margin: 0; }
        td.value pre { margin: 0; white-space: pre-wrap; word-break: break-word; font: inherit; }
        ul.list { padding-left: 1.2rem; }
        tr.failed td { color: var(--danger); }
        table.log td { font-variant-numeric: tabular-nums; }
        """

    /// Uploads: each file asks for an asset upload URL (the asset path the daemon and CloudKit
    /// clients use), is sent there with progress, then saved as an item of the folder.
    static let script = """
        "use strict";
        (function () {
          const meta = document.querySelector('meta[name="csrf-token"]');
          const csrf = meta ? meta.content : "";
          const list = document.getElementById("progress");
          async function post(path, body) {
            const response = await fetch(path, { method: "POST", credentials: "same-origin",
              headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf }, body: JSON.stringify(body) });
            const answer = await response.json().catch(() => ({}));
            if (!response.ok) throw new Error(answer.reason || response.statusText);
            return answer;
          }
          function send(url, file, bar) {
            return new Promise((resolve, reject) => {
              const request = new XMLHttpRequest();
              request.open("POST", url);
              request.upload.onprogress = (event) => { if (event.lengthComputable) { bar.max = event.total; bar.value = event.loaded; } };
              request.onload = () => {
                if (request.status >= 200 && request.status < 300) {
                  try { resolve(JSON.parse(request.responseText)); } catch (error) { reject(error); }
                } else { reject(new Error("upload failed (" + request.status + ")")); }
              };
              request.onerror = () => reject(new Error("upload failed"));
              request.send(file);
            });
          }
          async function upload(file, folder) {
            const item = document.createElement("li");
            const label = document.createElement("span");
            label.textContent = file.name + " ";
            const bar = document.createElement("progress");
            bar.max = Math.max(file.size, 1); bar.value = 0;
            bar.setAttribute("aria-label", "Uploading " + file.name);
            item.append(label, bar);
            if (list) list.append(item);
            try {
              let asset = null;
              const start = await post("/drive/upload", { folder: folder, name: file.name });
              if (file.size > 0) asset = (await send(start.url, file, bar)).singleFile;
              bar.value = bar.max;
              const saved = await post("/drive/uploaded", { folder: folder, name: file.name, recordName: start.recordName,
                asset: asset, modified: file.lastModified });
              label.textContent = "Uploaded " + saved.path + " ";
              item.dataset.done = "true";
            } catch (error) {
              label.textContent = file.name + ": " + error.message + " ";
              item.dataset.failed = "true";
            }
          }
          async function uploadAll(files, folder) {
            for (const file of files) await upload(file, folder);
            if (list && !list.querySelector("[data-failed]")) window.location.reload();
          }
          const input = document.getElementById("upload");
          if (input) input.addEventListener("change", () => uploadAll(Array.from(input.files), input.dataset.folder || ""));
          const drop = document.getElementById("drop");
          if (drop) {
            ["dragenter", "dragover"].forEach((type) => document.addEventListener(type, (event) => {
              event.preventDefault(); drop.classList.add("over"); }));
            ["dragleave", "drop"].forEach((type) => document.addEventListener(type, (event) => {
              event.preventDefault(); drop.classList.remove("over"); }));
            document.addEventListener("drop", (event) => {
              const files = event.dataTransfer ? Array.from(event.dataTransfer.files) : [];
              if (files.length) uploadAll(files, drop.dataset.folder || "");
            });
          }
        })();
        """
}
