// report tells the test server what happened on the page.
function report(v) { return fetch('/report?v=' + encodeURIComponent(v)); }
