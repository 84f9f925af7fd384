// The recording page's Summary panel and Ask box (SPEC §27). No build step, no inline script.
//
// Attaches to <section id="summary" data-url data-ask-url data-csrf>, shown only with
// [llm] on a done recording. On load it reads the summary (GET data-url: 404
// summary_not_found means none was asked for: Generate). Generate (Regenerate when the
// summary failed or is stale) posts to data-url with the session's CSRF token in
// X-CSRF-Token, as the editor does. While the summary is pending the page asks again after
// a growing wait (1 s up to 10 s), not while the tab is hidden, and stops once it is done or
// failed. Ask posts {question} to data-ask-url; each quote of the answer is a time link
// (a.at, href="#t=SECONDS") that the player seeks to, as a paragraph's time link.
(function () {
  "use strict";

  var panel = document.getElementById("summary");
  if (!panel) {
    return;
  }
  var FIRST_MS = 1000;
  var MOST_MS = 10000;
  var url = panel.dataset.url;
  var askUrl = panel.dataset.askUrl;
  var csrf = panel.dataset.csrf;
  var status = document.getElementById("summary-status");
  var body = document.getElementById("summary-body");
  var stale = document.getElementById("summary-stale");
  var generate = document.getElementById("summary-generate");
  var form = document.getElementById("ask");
  var question = document.getElementById("ask-question");
  var askStatus = document.getElementById("ask-status");
  var answer = document.getElementById("ask-answer");
  var wait = FIRST_MS;
  var timer = null;
  var pending = false;

  function say(element, message, isError) {
    element.textContent = message;
    element.classList.toggle("error", Boolean(isError));
  }

  function call(target, options) {
    options.credentials = "same-origin";
    options.headers = options.headers || {};
    options.headers.Accept = "application/json";
    return fetch(target, options).then(function (response) {
      return response.json().then(
        function (json) {
          return { response: response, json: json };
        },
        function () {
          return { response: response, json: null };
        }
      );
    });
  }

  function posted(target, json) {
    var headers = { "X-CSRF-Token": csrf };
    if (json !== undefined) {
      headers["Content-Type"] = "application/json";
    }
    return call(target, {
      method: "POST",
      headers: headers,
      body: json === undefined ? null : JSON.stringify(json),
    });
  }

  function list(name, items, fill) {
    var ul = document.getElementById("summary-" + name);
    ul.textContent = "";
    items.forEach(function (item) {
      var li = document.createElement("li");
      fill(li, item);
      ul.appendChild(li);
    });
    ul.hidden = items.length === 0;
    document.getElementById("summary-" + name + "-title").hidden = items.length === 0;
  }

  function offer(label) {
    generate.textContent = label;
    generate.hidden = false;
    generate.disabled = false;
  }

  function show(summary) {
    pending = summary.state === "pending";
    stale.hidden = !summary.stale;
    generate.hidden = true;
    if (summary.state === "done") {
      document.getElementById("summary-text").textContent = summary.text || "";
      list("points", summary.points, function (li, point) {
        li.textContent = point;
      });
      list("actions", summary.actions, function (li, action) {
        li.textContent = action.text;
        if (action.who) {
          var who = document.createElement("span");
          who.className = "who";
          who.textContent = " — " + action.who;
          li.appendChild(who);
        }
      });
      body.hidden = false;
      say(
        status,
        summary.stale
          ? pageText("summary_stale", "The transcript changed after this summary was made; regenerate it to catch up.")
          : pageText("summary_by", "Made by %(model)s.", { model: summary.model || pageText("the_model", "the language model") })
      );
      if (summary.stale) {
        offer(pageText("regenerate", "Regenerate"));
      }
    } else if (summary.state === "failed") {
      say(
        status,
        pageText("summary_failed", "The summary could not be made: %(reason)s.", {
          reason: summary.error || pageText("unknown_reason", "unknown reason"),
        }),
        true
      );
      offer(pageText("regenerate", "Regenerate"));
    } else {
      say(status, pageText("summarising", "Summarising… it shows here when it is ready."));
      schedule();
    }
  }

  function schedule() {
    window.clearTimeout(timer);
    timer = null;
    if (pending && !document.hidden) {
      timer = window.setTimeout(read, wait);
      wait = Math.min(wait * 2, MOST_MS);
    }
  }

  function read() {
    call(url, { method: "GET" })
      .then(function (result) {
        if (result.response.ok) {
          show(result.json);
        } else if (result.json && result.json.error === "summary_not_found") {
          say(status, pageText("no_summary", "No summary yet."));
          offer(pageText("generate", "Generate"));
        } else {
          say(status, result.json ? result.json.message : pageText("summary_unreadable", "The summary cannot be read now."), true);
        }
      })
      .catch(function () {
        // The service is restarting or the network is down: ask again after the wait.
        schedule();
      });
  }

  generate.addEventListener("click", function () {
    generate.disabled = true;
    posted(url)
      .then(function (result) {
        if (result.response.ok) {
          wait = FIRST_MS;
          show(result.json);
        } else {
          say(status, result.json ? result.json.message : pageText("summary_not_asked", "The summary was not asked for."), true);
          generate.disabled = false;
        }
      })
      .catch(function () {
        say(status, pageText("no_answer_service", "The service did not answer; try again."), true);
        generate.disabled = false;
      });
  });

  function clock(seconds) {
    var whole = Math.floor(seconds);
    var s = whole % 60;
    return Math.floor(whole / 60) + ":" + (s < 10 ? "0" : "") + s;
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var asked = question.value.trim();
    if (!asked) {
      return;
    }
    var button = form.querySelector("button");
    button.disabled = true;
    answer.hidden = true;
    say(askStatus, pageText("thinking", "Thinking…"));
    posted(askUrl, { question: asked })
      .then(function (result) {
        if (!result.response.ok) {
          if (result.json && result.json.error === "too_many_questions") {
            // The pace of questions (ADR 94), in the page's language.
            var seconds = result.response.headers.get("Retry-After") || "30";
            say(askStatus, pageText("too_many_questions", "Too many questions at once: ask again in %(seconds)s s.", { seconds: seconds }), true);
            return;
          }
          say(askStatus, result.json ? result.json.message : pageText("no_answer_now", "No answer now."), true);
          return;
        }
        say(askStatus, "");
        document.getElementById("ask-text").textContent = result.json.answer;
        var quotes = document.getElementById("ask-quotes");
        quotes.textContent = "";
        result.json.quotes.forEach(function (quote) {
          var li = document.createElement("li");
          var link = document.createElement("a");
          link.className = "at";
          link.href = "#t=" + quote.start.toFixed(2);
          link.textContent = clock(quote.start);
          li.appendChild(link);
          li.appendChild(document.createTextNode(" " + quote.text));
          quotes.appendChild(li);
        });
        answer.hidden = false;
      })
      .catch(function () {
        say(askStatus, pageText("no_answer_service", "The service did not answer; try again."), true);
      })
      .then(function () {
        button.disabled = false;
      });
  });

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && pending) {
      read();
    } else {
      schedule();
    }
  });
  read();
})();
