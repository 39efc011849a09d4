// Draws the analytics charts with chart.js from the page's JSON data block.
(function () {
  const block = document.getElementById('chart-data');
  if (!block || typeof Chart === 'undefined') return;
  const data = JSON.parse(block.textContent);
  const reduced = window.matchMedia('(prefers-reduced-motion: reduce)').matches;
  const common = { responsive: true, maintainAspectRatio: false, animation: reduced ? false : undefined };
  new Chart(document.getElementById('chart-weekly'), {
    type: 'bar',
    data: {
      labels: data.weekly.labels,
      datasets: [
        { label: 'created', data: data.weekly.created, backgroundColor: '#93c5fd' },
        { label: 'completed', data: data.weekly.completed, backgroundColor: '#15803d' },
      ],
    },
    options: { ...common, scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } },
  });
  new Chart(document.getElementById('chart-wip'), {
    type: 'doughnut',
    data: {
      labels: data.wip.labels.length ? data.wip.labels : ['no open work'],
      datasets: [
        {
          data: data.wip.values.length ? data.wip.values : [0],
          backgroundColor: ['#1d4ed8', '#b45309', '#7c3aed', '#0f766e', '#be123c', '#4b5563'],
        },
      ],
    },
    options: common,
  });
})();
