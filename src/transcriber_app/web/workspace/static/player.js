// The transcript page's player (ADR 56). A plain script file: no build step, no framework,
// never inline (the workspace's CSP is script-src 'self').
//
// - Click a word (span.w, data-start in seconds) to play from there; Enter on a focused word
//   does the same. A time link (a.at, href="#t=SECONDS": a paragraph's, an answer's quote)
//   plays from there.
// - While the audio plays, the word being spoken carries aria-current="true", one at a time:
//   a binary search over the words' starts, precomputed once, on each animation frame.
// - Space plays and pauses, unless the focus is in a field, a button, a link or editable text.
// - The transcript is one tab stop (a roving tabindex, on the word being spoken): Left and
//   Right move to the previous and next word, Up and Down to the previous and next paragraph.
// - #t=SECONDS in the address (a search result's link) seeks there on load.
// - An editor that replaces words dispatches "transcript:changed" on #transcript: the
//   timings are read again.
(function () {
  "use strict";

  var audio = document.getElementById("player");
  var article = document.getElementById("transcript");
  if (!audio) {
    return;
  }
  // Up to this long a pause between two words keeps the first one lit (seconds).
  var BRIDGE = 0.5;
  // After the reader scrolls, the page does not follow the spoken word for this long (ms).
  var HANDS_OFF = 4000;

  var words = [];
  var starts = new Float64Array(0);
  var ends = new Float64Array(0);
  var current = -1;
  var stop = -1;
  var ticking = false;
  var manual = 0;

  function index() {
    words = article ? Array.prototype.slice.call(article.querySelectorAll("span.w")) : [];
    starts = new Float64Array(words.length);
    ends = new Float64Array(words.length);
    for (var i = 0; i < words.length; i++) {
      starts[i] = parseFloat(words[i].getAttribute("data-start"));
      ends[i] = parseFloat(words[i].getAttribute("data-end"));
    }
    current = -1;
    stop = -1;
    if (words.length) {
      tabStop(0);
    }
  }

  // The last word that starts at or before t; -1 before the first.
  function startedBy(t) {
    var low = 0;
    var high = starts.length - 1;
    var found = -1;
    while (low <= high) {
      var middle = (low + high) >> 1;
      if (starts[middle] <= t) {
        found = middle;
        low = middle + 1;
      } else {
        high = middle - 1;
      }
    }
    return found;
  }

  // The word being spoken at t, or -1 in a long pause, before the first or after the last.
  function spokenAt(t) {
    var i = startedBy(t);
    if (i < 0) {
      return -1;
    }
    if (t < ends[i] || (i + 1 < starts.length && starts[i + 1] - ends[i] < BRIDGE)) {
      return i;
    }
    return -1;
  }

  function tabStop(i) {
    if (i === stop || i < 0 || i >= words.length) {
      return;
    }
    if (stop >= 0 && words[stop]) {
      words[stop].removeAttribute("tabindex");
    }
    words[i].tabIndex = 0;
    stop = i;
  }

  function follow(word) {
    if (Date.now() - manual < HANDS_OFF) {
      return;
    }
    var box = word.getBoundingClientRect();
    var top = (audio.closest(".player") || audio).getBoundingClientRect().bottom;
    if (box.top < top || box.bottom > window.innerHeight) {
      word.scrollIntoView({ block: "center" });
    }
  }

  function mark(i) {
    if (i === current) {
      return;
    }
    if (current >= 0 && words[current]) {
      words[current].removeAttribute("aria-current");
    }
    current = i;
    if (i < 0) {
      return;
    }
    words[i].setAttribute("aria-current", "true");
    if (!article.contains(document.activeElement)) {
      tabStop(i);
    }
    if (!audio.paused) {
      follow(words[i]);
    }
  }

  function update() {
    mark(spokenAt(audio.currentTime));
  }

  function tick() {
    update();
    if (audio.paused || audio.ended) {
      ticking = false;
      return;
    }
    window.requestAnimationFrame(tick);
  }

  function start() {
    if (!ticking) {
      ticking = true;
      window.requestAnimationFrame(tick);
    }
  }

  function play() {
    var playing = audio.play();
    if (playing && playing.catch) {
      playing.catch(function () {});
    }
  }

  function seek(seconds, andPlay) {
    if (!isFinite(seconds) || seconds < 0) {
      return;
    }
    // Before the metadata is in, this sets where playback will start (HTML's media rules).
    audio.currentTime = seconds;
    mark(spokenAt(seconds));
    if (andPlay) {
      play();
    }
  }

  function wordOf(node) {
    var word = node && node.closest ? node.closest("span.w") : null;
    return word && article && article.contains(word) ? word : null;
  }

  function position(word) {
    return parseInt(word.getAttribute("data-i"), 10);
  }

  function typing(node) {
    if (!node || node === document.body) {
      return false;
    }
    if (node.isContentEditable) {
      return true;
    }
    return /^(INPUT|TEXTAREA|SELECT|BUTTON|A|AUDIO|VIDEO|SUMMARY)$/.test(node.tagName);
  }

  function moveTo(word) {
    if (!word) {
      return;
    }
    var i = words.indexOf(word);
    if (i < 0) {
      return;
    }
    tabStop(i);
    word.focus();
  }

  function neighbourTurn(word, forward) {
    var turn = word.closest("p.turn");
    var next = turn ? (forward ? turn.nextElementSibling : turn.previousElementSibling) : null;
    while (next && !next.querySelector("span.w")) {
      next = forward ? next.nextElementSibling : next.previousElementSibling;
    }
    return next ? next.querySelector("span.w") : null;
  }

  function fromHash() {
    var found = /^#t=(\d+(?:\.\d+)?)$/.exec(window.location.hash);
    if (!found) {
      return;
    }
    var seconds = parseFloat(found[1]);
    seek(seconds, false);
    var i = startedBy(seconds);
    if (i >= 0) {
      tabStop(i);
      words[i].scrollIntoView({ block: "center" });
    }
  }

  // A time link anywhere on the page: a paragraph's, or a quote of an answer (summary.js).
  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a.at") : null;
    if (link && /^#t=/.test(link.getAttribute("href"))) {
      event.preventDefault();
      window.history.replaceState(null, "", link.getAttribute("href"));
      seek(parseFloat(link.getAttribute("href").slice(3)), true);
    }
  });

  if (article) {
    article.addEventListener("click", function (event) {
      if (event.target.closest && event.target.closest("a.at")) {
        return; // a time link: the page's own listener seeks
      }
      var word = wordOf(event.target);
      if (!word || word.isContentEditable) {
        return;
      }
      var selection = window.getSelection();
      if (selection && !selection.isCollapsed) {
        return; // the reader is selecting text to copy
      }
      tabStop(position(word));
      seek(parseFloat(word.getAttribute("data-start")), true);
    });

    article.addEventListener("keydown", function (event) {
      var word = wordOf(event.target);
      if (!word || word.isContentEditable || event.altKey || event.ctrlKey || event.metaKey) {
        return;
      }
      var i = words.indexOf(word);
      var target = null;
      if (event.key === "Enter") {
        event.preventDefault();
        seek(starts[i], true);
        return;
      }
      if (event.key === "ArrowRight") {
        target = words[i + 1];
      } else if (event.key === "ArrowLeft") {
        target = words[i - 1];
      } else if (event.key === "ArrowDown") {
        target = neighbourTurn(word, true);
      } else if (event.key === "ArrowUp") {
        target = neighbourTurn(word, false);
      } else {
        return;
      }
      event.preventDefault();
      moveTo(target);
    });

    article.addEventListener("transcript:changed", index);
  }

  document.addEventListener("keydown", function (event) {
    if (event.key !== " " || event.defaultPrevented || event.altKey || event.ctrlKey) {
      return;
    }
    if (typing(event.target)) {
      return;
    }
    event.preventDefault(); // not a page scroll
    if (audio.paused) {
      play();
    } else {
      audio.pause();
    }
  });

  function byHand() {
    manual = Date.now();
  }
  window.addEventListener("wheel", byHand, { passive: true });
  window.addEventListener("touchmove", byHand, { passive: true });

  audio.addEventListener("play", start);
  audio.addEventListener("seeked", update);
  audio.addEventListener("timeupdate", update);
  audio.addEventListener("error", function () {
    var note = document.getElementById("player-note");
    if (note) {
      note.textContent = pageText("audio_gone", "The audio cannot be played: it may no longer be stored.");
      note.className = "problem small";
    }
  });
  window.addEventListener("hashchange", fromHash);

  index();
  fromHash();
})();
