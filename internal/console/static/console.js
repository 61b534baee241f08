// tenantdb console: progressive enhancements only; every page works
// without JavaScript.
"use strict";
document.addEventListener("click", function (e) {
  var b = e.target.closest("button[data-copy]");
  if (!b) return;
  var input = document.getElementById(b.getAttribute("data-copy"));
  input.select();
  if (navigator.clipboard) {
    navigator.clipboard.writeText(input.value).then(function () { b.textContent = "Copied"; });
  }
});
document.addEventListener("submit", function (e) {
  var msg = e.target.getAttribute("data-confirm");
  if (msg && !window.confirm(msg)) e.preventDefault();
});
