// Sending recordings from the upload page (SPEC §20, ADR 64). No build step, no inline script.
//
// Attaches to the DOM contract of the upload page:
//   <form id="upload" action data-csrf data-max-bytes data-recordings> with the
//   #language and #speakers choices, a [data-dropzone] and the file input #files;
//   <ul id="uploads"> gets one row a file from <template id="upload-row">.
// Every file chosen or dropped gets a row with a title box holding its name without the
// extension, which the person may change (SPEC §26); the #send button sends the rows
// waiting (two at a time), each as its own POST of the form to the action with its title,
// with the session's CSRF token in X-CSRF-Token; its bar follows xhr.upload.onprogress. An accepted file's row gets data-job="ID", so live.js keeps its
// state current; a refused one shows the service's message and its error code. A
// CustomEvent "upload:files" on the form ({detail: {files}}) sends files at once, each
// titled by its name, without waiting for Send (a recording made on the page, record.js).
// "Paste a link" (#link, #link-send) sends the form with url instead of file at once
// (SPEC §28), without a title (the page's own becomes it); its row then shows the fetch's
// progress from the live list.
(function () {
  "use strict";

  var form = document.getElementById("upload");
  var input = document.getElementById("files");
  var list = document.getElementById("uploads");
  var template = document.getElementById("upload-row");
  if (!form || !input || !list || !template) {
    return;
  }
  var zone = form.querySelector("[data-dropzone]");
  var section = document.getElementById("sent-section");
  var sendButton = document.getElementById("send");
  var ready = [];
  var maxBytes = Number(form.getAttribute("data-max-bytes"));
  var limitText = form.getAttribute("data-limit") || maxBytes + " bytes";
  var PARALLEL = 2;
  var waiting = [];
  var sending = 0;

  function choice(id) {
    var select = document.getElementById(id);
    return select ? select.value : null;
  }

  function setPercent(item, percent) {
    var bar = item.row.querySelector("progress");
    bar.value = percent;
    item.row.querySelector(".percent").textContent = percent + " %";
  }

  function status(item, text) {
    item.row.querySelector('[data-field="now"]').textContent = text;
  }

  function badge(item, text, state) {
    var element = item.row.querySelector('[data-field="state"]');
    element.textContent = text;
    element.className = "badge state-" + state;
  }

  function refused(item, code, message) {
    item.row.classList.remove("sending");
    item.row.classList.add("refused");
    item.row.setAttribute("data-terminal", "yes");
    badge(item, pageText("refused", "refused"), "failed");
    status(item, message + " (" + code + ")");
    item.row.querySelector('[data-field="now"]').setAttribute("role", "alert");
  }

  function accepted(item, jobId) {
    item.row.classList.remove("sending");
    setPercent(item, 100);
    badge(item, pageText("sent", "sent"), "convert");
    status(item, pageText("sent_waiting", "sent; waiting for its turn"));
    var open = item.row.querySelector("a.open");
    open.href = form.getAttribute("data-recordings") + encodeURIComponent(jobId);
    open.hidden = false;
    item.row.setAttribute("data-job", jobId);
    document.dispatchEvent(new CustomEvent("live:poll"));
  }

  function answerOf(xhr) {
    try {
      return JSON.parse(xhr.responseText);
    } catch (ignored) {
      return null;
    }
  }

  function finish() {
    sending -= 1;
    next();
  }

  function send(item) {
    sending += 1;
    item.row.classList.add("sending");
    item.row.querySelector('[data-field="state"]').textContent = pageText("sending", "sending");
    status(item, pageText("sending", "sending"));
    var data = new FormData();
    data.append("language", item.language);
    if (item.speakers !== null) {
      data.append("speakers", item.speakers);
    }
    if (item.url) {
      data.append("url", item.url);
    } else {
      data.append("title", item.titleBox.value);
      data.append("file", item.file, item.file.name);
    }
    var xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    xhr.setRequestHeader("X-CSRF-Token", form.getAttribute("data-csrf"));
    xhr.setRequestHeader("Accept", "application/json");
    xhr.upload.onprogress = function (event) {
      if (event.lengthComputable && event.total > 0) {
        setPercent(item, Math.floor((100 * event.loaded) / event.total));
      }
    };
    xhr.upload.onload = function () {
      setPercent(item, 100);
      status(item, item.url ? pageText("checking_link", "sent; checking the link") : pageText("stored", "sent; being stored"));
    };
    xhr.onload = function () {
      var answer = answerOf(xhr);
      if (xhr.status === 202 && answer && answer.job_id) {
        accepted(item, answer.job_id);
      } else if (answer && answer.error) {
        refused(item, answer.error, answer.message);
      } else {
        refused(item, "http_" + xhr.status, pageText("service_refused", "The service refused the file"));
      }
      finish();
    };
    xhr.onerror = function () {
      refused(
        item,
        "network",
        pageText("connection_broke", "The connection broke before the file was taken; try again")
      );
      finish();
    };
    xhr.send(data);
  }

  function next() {
    while (sending < PARALLEL && waiting.length) {
      send(waiting.shift());
    }
  }

  function titleOf(name) {
    // The file's name without its extension: "interview.mp3" is "interview".
    var dot = name.lastIndexOf(".");
    return (dot > 0 ? name.slice(0, dot) : name).trim().slice(0, 200);
  }

  function add(file) {
    var row = template.content.firstElementChild.cloneNode(true);
    row.querySelector(".name").textContent = file.name;
    row.querySelector("progress").setAttribute("aria-label", pageText("sending_file", "Sending %(name)s", { name: file.name }));
    var titleBox = row.querySelector("input.title-input");
    titleBox.value = titleOf(file.name);
    titleBox.setAttribute("aria-label", pageText("title_of", "Title of %(name)s", { name: file.name }));
    list.appendChild(row);
    if (section) {
      section.hidden = false;
    }
    var item = {
      file: file,
      row: row,
      language: choice("language") || "auto",
      speakers: choice("speakers"),
      titleBox: titleBox,
    };
    if (maxBytes && file.size > maxBytes) {
      // The service would refuse it by its declared length; no need to send it first.
      refused(
        item,
        "too_large",
        pageText("too_large", "The file is larger than the limit of %(limit)s", { limit: limitText })
      );
      return null;
    }
    return item;
  }

  function offer(file) {
    var item = add(file);
    if (!item) {
      return;
    }
    status(item, pageText("ready_check", "ready: check its title, then Send"));
    ready.push(item);
    if (sendButton) {
      sendButton.hidden = false;
      sendButton.disabled = false;
    }
  }

  function addLink(url) {
    var row = template.content.firstElementChild.cloneNode(true);
    row.querySelector(".name").textContent = url;
    row.querySelector("progress").setAttribute("aria-label", pageText("sending_link", "Sending the link"));
    // A link's title is its page's, set once it is fetched.
    row.querySelector("input.title-input").remove();
    list.appendChild(row);
    if (section) {
      section.hidden = false;
    }
    var item = {
      url: url,
      row: row,
      language: choice("language") || "auto",
      speakers: choice("speakers"),
    };
    status(item, pageText("waiting", "waiting to be sent"));
    waiting.push(item);
    next();
  }

  var link = document.getElementById("link");
  var linkSend = document.getElementById("link-send");
  function sendLink() {
    var url = link.value.trim();
    if (url) {
      addLink(url);
      link.value = "";
    }
  }
  if (link && linkSend) {
    linkSend.addEventListener("click", sendLink);
    link.addEventListener("keydown", function (event) {
      if (event.key === "Enter") {
        event.preventDefault();
        sendLink();
      }
    });
  }

  function queue(item) {
    item.titleBox.readOnly = true;
    status(item, pageText("waiting", "waiting to be sent"));
    waiting.push(item);
  }

  function addAll(files) {
    Array.prototype.forEach.call(files, offer);
    if (!sendButton) {
      sendReady();
    }
  }

  function sendReady() {
    ready.forEach(queue);
    ready = [];
    if (sendButton) {
      sendButton.disabled = true;
    }
    next();
  }

  if (sendButton) {
    sendButton.addEventListener("click", sendReady);
  }

  form.addEventListener("upload:files", function (event) {
    Array.prototype.forEach.call(event.detail.files, function (file) {
      var item = add(file);
      if (item) {
        queue(item);
      }
    });
    next();
  });
  form.addEventListener("submit", function (event) {
    event.preventDefault();
  });
  input.addEventListener("change", function () {
    addAll(input.files);
    // The same file can be chosen again.
    input.value = "";
  });
  if (zone) {
    ["dragenter", "dragover"].forEach(function (name) {
      zone.addEventListener(name, function (event) {
        event.preventDefault();
        zone.classList.add("over");
      });
    });
    ["dragleave", "drop"].forEach(function (name) {
      zone.addEventListener(name, function () {
        zone.classList.remove("over");
      });
    });
    zone.addEventListener("drop", function (event) {
      event.preventDefault();
      if (event.dataTransfer && event.dataTransfer.files.length) {
        addAll(event.dataTransfer.files);
      }
    });
  }
  // A file dropped beside the zone must not replace the page with itself.
  ["dragover", "drop"].forEach(function (name) {
    window.addEventListener(name, function (event) {
      if (!zone || !zone.contains(event.target)) {
        event.preventDefault();
      }
    });
  });
})();
