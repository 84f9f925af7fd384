// The page's words for its scripts (SPEC §26): the JSON in this script element's
// data-strings attribute, read once.
// window.pageText(key, english, values) gives the translation, else the English, with
// each %(name)s replaced by values[name].
(function () {
  "use strict";
  var words = {};
  var element = document.currentScript || document.querySelector("script[data-strings]");
  if (element && element.dataset.strings) {
    try {
      words = JSON.parse(element.dataset.strings) || {};
    } catch (error) {
      words = {};
    }
  }
  window.pageText = function (key, english, values) {
    var text = Object.prototype.hasOwnProperty.call(words, key) ? words[key] : english;
    return text.replace(/%\((\w+)\)s/g, function (whole, name) {
      return values && Object.prototype.hasOwnProperty.call(values, name) ? String(values[name]) : whole;
    });
  };
})();
