// The live list of one's recordings (SPEC §20, ADR 64). No build step, no inline script.
//
// Attaches to the DOM contract of the recordings page and the upload page:
//   an element with data-live-url (the JSON to poll) and data-poll-ms (the first wait);
//   every element with data-job="ID" is one recording, whose [data-field] children
//   (title, state, now, when, length, preview) and a.id / a.open links are kept current;
//   a table with data-insert="yes" gets a row from <template id="recording-row"> for a
//   recording it does not show yet (one sent from another tab, a script, Telegram).
// It asks GET data-live-url (one query on the server) after the wait the last answer
// gave (poll_ms: short while something moves, long while nothing does), never while the
// tab is hidden, and at once when the tab comes back or when "live:poll" is dispatched
// on the document (the upload page does, as each file is accepted).
(function () {
  "use strict";

  var source = document.querySelector("[data-live-url]");
  if (!source) {
    return;
  }
  var url = source.getAttribute("data-live-url");
  var wait = Number(source.getAttribute("data-poll-ms")) || 2000;
  var BUSY_MS = 2000;
  var timer = null;
  var asking = false;
  var again = false;
  var stopped = false;

  function field(element, name) {
    return element.querySelector('[data-field="' + name + '"]');
  }

  function put(element, name, text) {
    var target = field(element, name);
    if (target && target.textContent !== text) {
      target.textContent = text;
    }
  }

  function fill(element, job) {
    element.setAttribute("data-terminal", job.terminal ? "yes" : "no");
    var badge = field(element, "state");
    if (badge) {
      badge.textContent = job.state_name || job.state;
      badge.className = "badge state-" + job.state;
    }
    put(element, "title", job.title);
    put(element, "now", job.now);
    put(element, "when", job.when);
    put(element, "length", job.length);
    put(element, "preview", job.preview);
    var preview = field(element, "preview");
    if (preview) {
      preview.classList.toggle("error", Boolean(job.failed));
    }
    var when = field(element, "when");
    if (when) {
      when.title = job.when_full;
    }
    var open = element.querySelector("a.open");
    if (open) {
      open.href = job.url;
      open.hidden = false;
    }
  }

  function insert(job) {
    var table = document.querySelector('table[data-insert="yes"]');
    var template = document.getElementById("recording-row");
    if (!table || !template) {
      return;
    }
    var row = template.content.firstElementChild.cloneNode(true);
    row.setAttribute("data-job", job.id);
    var link = row.querySelector("a.id");
    link.href = job.url;
    link.title = job.id;
    var remove = row.querySelector("a.delete");
    if (remove) {
      remove.href = job.url + "/delete";
      remove.setAttribute("aria-label", pageText("delete_named", "Delete %(name)s", { name: job.title }));
    }
    fill(row, job);
    var body = table.tBodies[0];
    // Newest first: a job the page does not show yet is newer than those it does.
    body.insertBefore(row, body.firstElementChild);
    table.hidden = false;
    var empty = document.getElementById("no-recordings");
    if (empty) {
      empty.hidden = true;
    }
  }

  function apply(answer) {
    var fresh = [];
    answer.jobs.forEach(function (job) {
      var shown = document.querySelectorAll('[data-job="' + CSS.escape(job.id) + '"]');
      if (!shown.length) {
        fresh.push(job);
      }
      Array.prototype.forEach.call(shown, function (element) {
        fill(element, job);
      });
    });
    // The answer is newest first; inserting the oldest first keeps that order on the page.
    fresh.reverse().forEach(insert);
    wait = answer.poll_ms;
    if (document.querySelector('[data-job][data-terminal="no"], .upload-item.sending')) {
      wait = Math.min(wait, BUSY_MS);
    }
  }

  function schedule(ms) {
    window.clearTimeout(timer);
    timer = null;
    if (!stopped && !document.hidden) {
      timer = window.setTimeout(ask, ms);
    }
  }

  function ask() {
    if (stopped || document.hidden) {
      return;
    }
    if (asking) {
      again = true;
      return;
    }
    asking = true;
    window.clearTimeout(timer);
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (response.status === 403) {
          // Signed out (or disabled): nothing more to show; a reload shows the sign-in page.
          stopped = true;
          return null;
        }
        return response.ok ? response.json() : null;
      })
      .then(function (answer) {
        if (answer) {
          apply(answer);
        }
      })
      .catch(function () {
        // The service is restarting or the network is down: ask again after the wait.
      })
      .then(function () {
        asking = false;
        if (again) {
          again = false;
          ask();
        } else {
          schedule(wait);
        }
      });
  }

  document.addEventListener("visibilitychange", function () {
    if (document.hidden) {
      window.clearTimeout(timer);
      timer = null;
    } else {
      ask();
    }
  });
  document.addEventListener("live:poll", ask);
  schedule(wait);
})();
