// Correcting a transcript in place (SPEC §20, ADR 57). No build step, no inline script.
//
// Attaches to the transcript page's DOM contract:
//   <article id="transcript" data-job data-version data-csrf data-words-url>
//     <p class="turn" data-speaker="S1"> <span class="w" data-i data-start data-end>word</span> …
// Each turn gets an "Edit" button. Editing swaps the turn's words for a text box holding
// their text; Save (or Ctrl+Enter) posts {version, start, end, text} to data-words-url
// with the session's CSRF token in X-CSRF-Token, and puts the words of the answer in
// place of the old ones, and the version and "seen" of the page's other forms (the
// speakers' renames, the restore) with the answer's; Cancel (or Escape) puts the old
// words back. A 409 says that
// someone saved first and keeps the text box open with what was typed.
(function () {
  "use strict";

  var article = document.getElementById("transcript");
  if (!article) {
    return;
  }
  var status = document.getElementById("edit-status");
  var editing = null;

  function say(message, isError) {
    if (!status) {
      return;
    }
    status.textContent = message;
    status.classList.toggle("error", Boolean(isError));
  }

  function wordsOf(turn) {
    return Array.prototype.slice.call(turn.querySelectorAll("span.w"));
  }

  function rangeOf(turn) {
    var words = wordsOf(turn);
    if (words.length === 0) {
      return null;
    }
    var first = Number(words[0].dataset.i);
    var last = Number(words[words.length - 1].dataset.i);
    return { start: first, end: last + 1 };
  }

  function button(label, className) {
    var made = document.createElement("button");
    made.type = "button";
    made.textContent = label;
    made.className = className;
    return made;
  }

  function wordSpan(word) {
    var span = document.createElement("span");
    span.className = "w";
    span.dataset.i = String(word.i);
    span.dataset.start = word.start.toFixed(2);
    span.dataset.end = word.end.toFixed(2);
    span.textContent = word.text;
    return span;
  }

  function renumberAfter(end, shift) {
    if (shift === 0) {
      return;
    }
    wordsOf(article).forEach(function (span) {
      var i = Number(span.dataset.i);
      if (i >= end) {
        span.dataset.i = String(i + shift);
      }
    });
  }

  function close(state) {
    state.box.remove();
    state.controls.remove();
    state.words.forEach(function (span) {
      span.hidden = false;
    });
    state.turn.classList.remove("editing");
    state.edit.hidden = false;
    state.edit.focus();
    editing = null;
  }

  function replaceWords(state, answer) {
    // Later words move by the answer's shift first, so only they are renumbered.
    renumberAfter(state.range.end, answer.shift);
    var anchor = state.words.length ? state.words[0] : state.box;
    answer.words.forEach(function (word) {
      state.turn.insertBefore(wordSpan(word), anchor);
      state.turn.insertBefore(document.createTextNode(" "), anchor);
    });
    state.words.forEach(function (span) {
      var next = span.nextSibling;
      if (next && next.nodeType === Node.TEXT_NODE && next.textContent.trim() === "") {
        next.remove();
      }
      span.remove();
    });
    state.words = [];
    article.dataset.version = String(answer.version);
    // The page's forms carry what it has seen: after its own change they say so, and a
    // rename or a restore from this page is no conflict (SPEC §26).
    Array.prototype.forEach.call(
      document.querySelectorAll('form input[name="seen"]'),
      function (input) {
        input.value = answer.seen;
      }
    );
    Array.prototype.forEach.call(
      document.querySelectorAll('form.restore input[name="version"]'),
      function (input) {
        input.value = String(answer.version);
      }
    );
    // The player re-reads the words' timings (player.js).
    article.dispatchEvent(new CustomEvent("transcript:changed"));
  }

  function save(state) {
    var body = {
      version: Number(article.dataset.version),
      start: state.range.start,
      end: state.range.end,
      text: state.box.value,
    };
    state.save.disabled = true;
    say(pageText("saving", "Saving…"), false);
    fetch(article.dataset.wordsUrl, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": article.dataset.csrf },
      body: JSON.stringify(body),
    })
      .then(function (response) {
        return response.json().then(
          function (answer) {
            return { response: response, answer: answer };
          },
          function () {
            return { response: response, answer: null };
          }
        );
      })
      .then(function (result) {
        state.save.disabled = false;
        var answer = result.answer;
        if (result.response.ok && answer) {
          replaceWords(state, answer);
          var emptied = answer.words.length === 0;
          var turn = state.turn;
          close(state);
          if (emptied) {
            turn.remove();
          }
          say(pageText("saved", "Saved."), false);
          return;
        }
        if (result.response.status === 409 && answer && answer.error === "edit_conflict") {
          say(answer.message, true);
          return;
        }
        say(answer && answer.message ? answer.message : pageText("not_saved", "The correction was not saved."), true);
      })
      .catch(function () {
        state.save.disabled = false;
        say(pageText("unreachable", "The correction was not saved: the service could not be reached."), true);
      });
  }

  function open(turn, edit) {
    if (editing) {
      editing.box.focus();
      return;
    }
    var range = rangeOf(turn);
    if (!range) {
      return;
    }
    var words = wordsOf(turn);
    var box = document.createElement("textarea");
    box.className = "turn-editor";
    box.setAttribute("aria-label", pageText("turn_text", "Corrected text of this turn"));
    box.value = words
      .map(function (span) {
        return span.textContent;
      })
      .join(" ");
    box.rows = Math.min(12, Math.max(2, Math.ceil(box.value.length / 70)));
    var controls = document.createElement("span");
    controls.className = "edit-controls";
    var saveButton = button(pageText("save", "Save"), "save");
    var cancelButton = button(pageText("cancel", "Cancel"), "secondary cancel");
    controls.appendChild(saveButton);
    controls.appendChild(document.createTextNode(" "));
    controls.appendChild(cancelButton);
    words.forEach(function (span) {
      span.hidden = true;
    });
    turn.insertBefore(box, edit);
    turn.insertBefore(controls, edit);
    edit.hidden = true;
    turn.classList.add("editing");
    var state = {
      turn: turn,
      words: words,
      range: range,
      box: box,
      controls: controls,
      edit: edit,
      save: saveButton,
    };
    editing = state;
    saveButton.addEventListener("click", function () {
      save(state);
    });
    cancelButton.addEventListener("click", function () {
      close(state);
      say("", false);
    });
    box.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        save(state);
      } else if (event.key === "Escape") {
        event.preventDefault();
        close(state);
        say("", false);
      }
    });
    box.focus();
  }

  Array.prototype.forEach.call(article.querySelectorAll("p.turn"), function (turn) {
    var edit = button(pageText("edit", "Edit"), "secondary edit-turn");
    edit.setAttribute("aria-label", pageText("edit_turn", "Edit this turn"));
    edit.addEventListener("click", function () {
      open(turn, edit);
    });
    turn.appendChild(document.createTextNode(" "));
    turn.appendChild(edit);
  });
})();
