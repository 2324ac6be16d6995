/* django-celery-beat's periodic task form: show the chosen crontab in words under the crontab field
   (its template did this in an inline script, which the admin's CSP refuses). Text only, no markup. */
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    const data = document.getElementById("readable-crontabs");
    const select = document.getElementById("id_crontab");
    const help = document.querySelector(".field-crontab .help");
    if (!data || !select || !help) return;
    const readable = JSON.parse(data.textContent);
    const original = help.textContent;
    document.querySelectorAll(".field-crontab_translation").forEach(function (el) { el.hidden = true; });
    select.addEventListener("change", function () {
      const words = readable[select.value];
      help.textContent = words ? original + " Translation: " + words : original;
    });
  });
})();
