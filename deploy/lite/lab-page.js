// The workshop's two changes to the JupyterLite page (lab/index.html). tools/build_lite.py copies this file into
// the site's lab/ folder, loads it from lab/index.html, and sets exposeAppInBrowser in jupyter-lite.json, which
// makes JupyterLite put its application in window.jupyterapp.
//
// 1. Key presses reach an explorer's text box before JupyterLab's shortcuts, as in JupyterLab. JupyterLite 0.6
//    starts its application without JupyterLab's bubblingKeydown option, so the application saw every key on its
//    way down to the page, before the widget: for Enter in a box inside a notebook cell it cancelled the line
//    break, and with it the browser's "change" that submits the box. JupyterLab itself listens on the way back
//    up, after the widget has kept the key (later JupyterLite versions too): this moves the listeners there.
// 2. A reload opens the notebook that was open. JupyterLite 0.6 drops ?path= from the address once it has opened
//    that document and keeps no workspace between visits, so a reload showed the Launcher: the address now keeps
//    ?path= of the document in front.
(async function () {
  let app = window.jupyterapp;
  while (!app) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    app = window.jupyterapp;
  }
  await app.started; // its key listeners are on the document from here on
  for (const type of ['keydown', 'keyup']) {
    document.removeEventListener(type, app, true);
    document.addEventListener(type, app, false);
  }

  await app.restored;
  const keepPath = () => {
    const widget = app.shell.currentWidget;
    const path = widget && widget.context ? widget.context.path : '';
    const url = new URL(window.location.href);
    if (path) {
      url.searchParams.set('path', path);
    } else {
      url.searchParams.delete('path');
    }
    url.search = url.search.replace(/%2F/g, '/'); // ?path=notebooks/00_setup_check.ipynb, as the links write it
    if (url.href !== window.location.href) {
      window.history.replaceState(window.history.state, '', url.href);
    }
  };
  // after JupyterLite's own address change, which follows the opening of a ?path= document in the same turn
  app.shell.currentChanged.connect(() => setTimeout(keepPath));
  setTimeout(keepPath);
})();
