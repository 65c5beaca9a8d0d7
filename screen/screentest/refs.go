package screentest

// RefsPage is a page for snapshots and element references: a form taller
// than the viewport, with a name field, a password field, a button that
// removes itself, and a Send button below the fold that puts "sent " and
// the name in the document's title.
const RefsPage = `<!doctype html><html><head><title>Refs</title></head><body style="margin:0;font:16px sans-serif">
<h1>Sign up</h1>
<label>Full name <input id="name" required></label>
<input id="pin" type="password" aria-label="PIN">
<button id="gone" onclick="this.remove()">Vanish</button>
<div style="height:2000px"></div>
<button id="send" onclick="document.title='sent '+document.getElementById('name').value">Send</button>
</body></html>`
