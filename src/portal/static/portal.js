// The portal's only script: the copy button beside a new API key's value, and "choose all" boxes on
// the FHIR review page. Every page works without it.
'use strict';

document.addEventListener('click', (event) => {
  const button = event.target instanceof Element ? event.target.closest('[data-copy]') : null;
  if (!button) return;
  const field = document.getElementById(button.getAttribute('data-copy'));
  if (!field) return;
  field.focus();
  field.select();
  const done = () => { button.textContent = button.getAttribute('data-copied') || button.textContent; };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(field.value).then(done, () => { document.execCommand('copy'); done(); });
  } else {
    document.execCommand('copy');
    done();
  }
});

document.addEventListener('change', (event) => {
  const box = event.target;
  if (!(box instanceof HTMLInputElement) || !box.hasAttribute('data-choose-all')) return;
  for (const item of document.querySelectorAll(`input[type=checkbox][data-group="${box.getAttribute('data-choose-all')}"]:not(:disabled)`)) {
    item.checked = box.checked;
  }
});
