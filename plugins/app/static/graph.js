// Draws the neighborhood picture with cytoscape (breadthfirst layout around the root) from the
// page's JSON data block; a click or Enter on a node opens it.
(function () {
  const block = document.getElementById('graph-data');
  const box = document.getElementById('graph');
  if (!block || !box || typeof cytoscape === 'undefined') return;
  // cytoscape injects an inline <style> unless an element with this id exists; the CSP forbids
  // inline styles, so the same rule comes from a file.
  if (!document.getElementById('__________cytoscape_stylesheet')) {
    const link = document.createElement('link');
    link.id = '__________cytoscape_stylesheet';
    link.rel = 'stylesheet';
    link.href = '/app/static/cytoscape.css';
    document.head.prepend(link);
  }
  const data = JSON.parse(block.textContent);
  const cy = cytoscape({
    container: box,
    elements: data.elements,
    wheelSensitivity: 0.3,
    style: [
      {
        selector: 'node',
        style: {
          label: 'data(label)',
          'font-size': 11,
          'text-wrap': 'wrap',
          'text-max-width': 140,
          'text-valign': 'bottom',
          'text-margin-y': 4,
          'background-color': '#60a5fa',
          width: 22,
          height: 22,
          color: '#111827',
        },
      },
      { selector: 'node[?done]', style: { 'background-color': '#16a34a' } },
      { selector: 'node[?root]', style: { 'background-color': '#1d4ed8', width: 34, height: 34, 'font-weight': 'bold' } },
      {
        selector: 'edge',
        style: {
          label: 'data(label)',
          'font-size': 9,
          color: '#374151',
          'curve-style': 'bezier',
          'target-arrow-shape': 'triangle',
          'line-color': '#9ca3af',
          'target-arrow-color': '#9ca3af',
          width: 1.5,
          'text-rotation': 'autorotate',
          'text-background-color': '#fff',
          'text-background-opacity': 0.8,
        },
      },
    ],
    layout: { name: 'breadthfirst', roots: [data.root], directed: false, spacingFactor: 1.1, padding: 20, animate: false },
  });
  cy.on('tap', 'node', (event) => {
    window.location.href = '/app/nodes/' + encodeURIComponent(event.target.id());
  });
})();
