package hitjs

// Native <select> menus. Headless Chromium draws an open select's menu in
// a popup of its own, which is not part of the page's screenshot, so a
// model would click a select and see nothing. Both browser backends show
// the menu in the page instead: SelectMenu, added to every document of a
// tab in the isolated world SelectWorld (out of the page's reach), stops
// the native popup of a dropdown select and draws its options as a list
// below it, a row of 24 px each. A click on an option chooses it as the
// native menu would (selectedIndex, then input and change events);
// Escape, a click elsewhere or a second click on the select closes the
// list, and the arrow keys and Enter work as in a menu. Selects that show
// their options in the page already (multiple, size > 1) are left alone.

// SelectWorld names the isolated world of SelectMenu.
const SelectWorld = "spotter-select"

// SelectMenu is the script that draws open select menus in the page.
const SelectMenu = `(() => {
	if (window.__spotterSelect) return;
	window.__spotterSelect = true;
	let open = null; // {select, host, rows, active}
	const ROW = 24, MAX_ROWS = 12;
	function close() {
		if (!open) return;
		open.host.remove();
		open = null;
	}
	function choose(i) {
		const s = open.select;
		close();
		if (s.selectedIndex !== i) {
			s.selectedIndex = i;
			s.dispatchEvent(new Event("input", {bubbles: true, composed: true}));
			s.dispatchEvent(new Event("change", {bubbles: true}));
		}
		s.focus();
	}
	function highlight(k) {
		if (!open || !open.rows.length) return;
		k = Math.max(0, Math.min(open.rows.length - 1, k));
		for (const r of open.rows) r.el.classList.remove("active");
		open.active = k;
		open.rows[k].el.classList.add("active");
		open.rows[k].el.scrollIntoView({block: "nearest"});
	}
	function show(s) {
		const rect = s.getBoundingClientRect();
		const host = document.createElement("spotter-select-menu");
		const root = host.attachShadow({mode: "closed"});
		const style = document.createElement("style");
		style.textContent =
			":host{all:initial}" +
			".menu{position:fixed;z-index:2147483647;background:#fff;color:#000;border:1px solid #767676;" +
			"box-shadow:0 2px 6px rgba(0,0,0,.35);font:14px/" + ROW + "px sans-serif;overflow-y:auto;margin:0;padding:0}" +
			".row{height:" + ROW + "px;padding:0 8px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;cursor:default}" +
			".row.sel{background:#cfe3ff}.row.active{background:#1a73e8;color:#fff}" +
			".row.dis{color:#9a9a9a}.group{font-weight:bold;padding:0 4px}";
		const menu = document.createElement("div");
		menu.className = "menu";
		const rows = [];
		let parent = null;
		for (const [i, o] of Array.from(s.options).entries()) {
			if (o.parentElement !== parent && o.parentElement.tagName === "OPTGROUP") {
				const g = document.createElement("div");
				g.className = "row group";
				g.textContent = o.parentElement.label;
				menu.appendChild(g);
			}
			parent = o.parentElement;
			const r = document.createElement("div");
			r.className = "row";
			r.textContent = o.label || o.text;
			if (o.parentElement.tagName === "OPTGROUP") r.style.paddingLeft = "20px";
			if (i === s.selectedIndex) r.classList.add("sel");
			if (o.disabled || (o.parentElement.tagName === "OPTGROUP" && o.parentElement.disabled)) {
				r.classList.add("dis");
			} else {
				const k = rows.length;
				rows.push({el: r, index: i});
				r.addEventListener("mousemove", () => highlight(k));
				r.addEventListener("click", e => { e.stopPropagation(); choose(i); });
			}
			menu.appendChild(r);
		}
		const vh = innerHeight, vw = innerWidth;
		const n = Math.min(menu.childNodes.length, MAX_ROWS);
		const h = n * ROW + 2;
		let top = rect.bottom;
		if (top + h > vh && rect.top - h >= 0) top = rect.top - h;
		menu.style.top = Math.max(0, Math.min(top, vh - h)) + "px";
		menu.style.left = Math.max(0, Math.min(rect.left, vw - rect.width)) + "px";
		menu.style.minWidth = Math.max(rect.width - 2, 40) + "px";
		menu.style.maxHeight = (MAX_ROWS * ROW) + "px";
		menu.addEventListener("mousedown", e => { e.preventDefault(); e.stopPropagation(); });
		root.append(style, menu);
		document.documentElement.appendChild(host);
		open = {select: s, host, rows, active: -1};
		const k = rows.findIndex(r => r.index === s.selectedIndex);
		if (k >= 0) highlight(k);
	}
	addEventListener("mousedown", e => {
		if (open && e.composedPath().includes(open.host)) return;
		const s = e.composedPath().find(n => n instanceof HTMLSelectElement);
		const was = open && open.select;
		close();
		if (!s || s.multiple || s.size > 1 || s.disabled || e.button !== 0) return;
		e.preventDefault();
		s.focus();
		if (was !== s) show(s);
	}, true);
	addEventListener("keydown", e => {
		if (!open) return;
		if (e.key === "Escape") close();
		else if (e.key === "ArrowDown") highlight(open.active + 1);
		else if (e.key === "ArrowUp") highlight(open.active - 1);
		else if (e.key === "Enter" && open.active >= 0) choose(open.rows[open.active].index);
		else return;
		e.preventDefault();
		e.stopPropagation();
	}, true);
	addEventListener("blur", close);
	addEventListener("resize", close);
})()`
