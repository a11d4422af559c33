// Copy buttons on code blocks. A session with ">>> " / "... " prompts copies only its input lines,
// without the prompts (the printed output is left out); a "$ " shell prompt is stripped too.
(function () {
  function copyText(text) {
    var lines = text.replace(/\n$/, "").split("\n");
    var prompted = lines.some(function (l) { return /^(>>> |\$ )/.test(l); });
    if (!prompted) { return lines.join("\n") + "\n"; }
    var kept = [];
    lines.forEach(function (l) {
      var m = /^(>>> |\.\.\. |\$ )(.*)$/.exec(l) || /^(>>>|\.\.\.)$/.exec(l);
      if (m) { kept.push(m[2] === undefined ? "" : m[2]); }
    });
    return kept.join("\n") + "\n";
  }
  window.posencCopyText = copyText;
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("div.highlight > pre, pre.literal-block").forEach(function (pre) {
      var button = document.createElement("button");
      button.className = "posenc-copy";
      button.type = "button";
      button.textContent = "copy";
      button.title = "Copy (prompts and output left out)";
      button.addEventListener("click", function () {
        var done = function () { button.textContent = "copied"; setTimeout(function () { button.textContent = "copy"; }, 1500); };
        var text = copyText(pre.innerText);
        if (navigator.clipboard) { navigator.clipboard.writeText(text).then(done, done); } else { done(); }
      });
      pre.parentNode.style.position = "relative";
      pre.parentNode.insertBefore(button, pre);
    });
  });
})();
