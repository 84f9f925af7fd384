// Recording in the browser on the upload page (SPEC §26). No build step, no inline script.
//
// Attaches to <div data-recorder hidden> inside <form id="upload">: the button #record,
// the elapsed time #record-time, the level <meter id="record-level"> and #record-status.
// Shown only where getUserMedia, MediaRecorder and Opus in WebM or Ogg are all there.
// Record asks for the microphone and records Opus; an AnalyserNode moves the meter; Stop
// hands the recording to upload.js as a file ("upload:files" on the form), which sends it
// as a chosen file is sent: the one way in, the person's CSRF token, a row with a bar.
(function () {
  "use strict";

  var form = document.getElementById("upload");
  var box = form && form.querySelector("[data-recorder]");
  var button = document.getElementById("record");
  var clock = document.getElementById("record-time");
  var meter = document.getElementById("record-level");
  var said = document.getElementById("record-status");
  if (!box || !button || !clock || !meter || !said) {
    return;
  }
  var media = navigator.mediaDevices;
  if (!media || !media.getUserMedia || !window.MediaRecorder) {
    return;
  }
  // The container the file is sent in, with the extension the service keeps.
  var FORMATS = [
    { type: "audio/webm;codecs=opus", extension: "webm" },
    { type: "audio/ogg;codecs=opus", extension: "ogg" },
  ];
  var format = FORMATS.filter(function (each) {
    return MediaRecorder.isTypeSupported(each.type);
  })[0];
  if (!format) {
    return;
  }
  box.hidden = false;

  var recorder = null;
  var stream = null;
  var audio = null;
  var chunks = [];
  var started = 0;
  var ticking = null;
  var drawing = null;

  function label(text) {
    button.querySelector("[data-label]").textContent = text;
  }

  function twoDigits(number) {
    return (number < 10 ? "0" : "") + number;
  }

  function elapsed(milliseconds) {
    var seconds = Math.floor(milliseconds / 1000);
    var minutes = Math.floor(seconds / 60);
    var hours = Math.floor(minutes / 60);
    var rest = twoDigits(seconds % 60);
    return hours ? hours + ":" + twoDigits(minutes % 60) + ":" + rest : minutes + ":" + rest;
  }

  function stamp(date) {
    return (
      date.getFullYear() + "-" + twoDigits(date.getMonth() + 1) + "-" + twoDigits(date.getDate()) +
      " " + twoDigits(date.getHours()) + "-" + twoDigits(date.getMinutes())
    );
  }

  function listen(source) {
    // The meter shows the loudness (RMS) of the last few milliseconds, redrawn each frame.
    var Context = window.AudioContext || window.webkitAudioContext;
    if (!Context) {
      return;
    }
    audio = new Context();
    var analyser = audio.createAnalyser();
    analyser.fftSize = 1024;
    audio.createMediaStreamSource(source).connect(analyser);
    var samples = new Float32Array(analyser.fftSize);
    function draw() {
      analyser.getFloatTimeDomainData(samples);
      var sum = 0;
      for (var i = 0; i < samples.length; i += 1) {
        sum += samples[i] * samples[i];
      }
      // sqrt twice: quiet speech still moves the bar visibly.
      meter.value = Math.min(1, Math.sqrt(Math.sqrt(sum / samples.length)));
      drawing = window.requestAnimationFrame(draw);
    }
    draw();
  }

  function release() {
    window.clearInterval(ticking);
    window.cancelAnimationFrame(drawing);
    meter.value = 0;
    if (stream) {
      stream.getTracks().forEach(function (track) {
        track.stop();
      });
    }
    if (audio) {
      audio.close();
    }
    stream = null;
    audio = null;
    recorder = null;
    box.classList.remove("recording");
    button.setAttribute("aria-pressed", "false");
    label(pageText("record", "Record"));
  }

  function finished(type) {
    var when = new Date();
    var blob = new Blob(chunks, { type: type });
    chunks = [];
    release();
    if (!blob.size) {
      said.textContent = pageText("nothing_recorded", "Nothing was recorded.");
      return;
    }
    var name = "Recording " + stamp(when) + "." + format.extension;
    var file = new File([blob], name, { type: blob.type });
    said.textContent = pageText("recorded", "Recorded %(time)s; sending it.", { time: clock.textContent });
    form.dispatchEvent(new CustomEvent("upload:files", { detail: { files: [file] } }));
  }

  function start() {
    button.disabled = true;
    said.textContent = pageText("asking_microphone", "Asking for the microphone…");
    media
      .getUserMedia({ audio: { echoCancellation: true, noiseSuppression: true } })
      .then(function (granted) {
        stream = granted;
        chunks = [];
        recorder = new MediaRecorder(stream, { mimeType: format.type });
        recorder.addEventListener("dataavailable", function (event) {
          if (event.data && event.data.size) {
            chunks.push(event.data);
          }
        });
        recorder.addEventListener("stop", function () {
          finished(recorder.mimeType || format.type);
        });
        recorder.start(1000);
        started = Date.now();
        clock.textContent = "0:00";
        ticking = window.setInterval(function () {
          clock.textContent = elapsed(Date.now() - started);
        }, 250);
        listen(stream);
        box.classList.add("recording");
        button.setAttribute("aria-pressed", "true");
        label(pageText("stop", "Stop"));
        said.textContent = pageText("recording_now", "Recording. Stop sends it.");
      })
      .catch(function (error) {
        release();
        said.textContent =
          error && error.name === "NotAllowedError"
            ? pageText("microphone_refused", "The browser was not allowed to use the microphone.")
            : pageText("no_microphone", "No microphone could be opened.");
      })
      .then(function () {
        button.disabled = false;
      });
  }

  // Leaving the page while it records would lose the recording: the browser asks first.
  window.addEventListener("beforeunload", function (event) {
    if (recorder && recorder.state === "recording") {
      event.preventDefault();
      event.returnValue = "";
    }
  });
  button.addEventListener("click", function () {
    if (recorder && recorder.state === "recording") {
      clock.textContent = elapsed(Date.now() - started);
      recorder.stop();
    } else if (!recorder) {
      start();
    }
  });
})();
