// The explorer's one script: the pages read without it. It subscribes to
// new blocks on the daemon's Blockbook websocket and, on each, reloads the
// page's content in place, so the latest blocks and confirmations follow
// the chain without a reload.
(function () {
  'use strict';
  var live = document.getElementById('live');
  var content = document.getElementById('content');
  if (!live || !content || !('WebSocket' in window) || !window.fetch || !window.DOMParser) return;
  var scheme = location.protocol === 'https:' ? 'wss://' : 'ws://';
  var retry = 1000;

  function refresh(block) {
    fetch(location.href, { credentials: 'same-origin' }).then(function (r) {
      return r.ok ? r.text() : null;
    }).then(function (html) {
      if (html === null) return;
      var fresh = new DOMParser().parseFromString(html, 'text/html').getElementById('content');
      if (fresh) {
        content.replaceWith(fresh);
        content = fresh;
      }
      live.textContent = 'Live: block ' + block.height + ' arrived.';
      document.body.dataset.height = block.height;
    }).catch(function () {});
  }

  function connect() {
    var ws = new WebSocket(scheme + location.host + '/websocket');
    var ping = null;
    ws.onopen = function () {
      retry = 1000;
      ws.send(JSON.stringify({ id: 'block', method: 'subscribeNewBlock', params: {} }));
      // The daemon closes a websocket that says nothing for its idle timeout.
      ping = setInterval(function () { ws.send(JSON.stringify({ id: 'ping', method: 'ping', params: {} })); }, 20000);
    };
    ws.onmessage = function (ev) {
      var m = JSON.parse(ev.data);
      if (m.id !== 'block' || !m.data) return;
      if (m.data.subscribed) {
        live.textContent = 'Live: the page follows new blocks.';
        document.body.dataset.live = 'yes';
      } else if (typeof m.data.height === 'number') {
        refresh(m.data);
      }
    };
    ws.onclose = function () {
      clearInterval(ping);
      live.textContent = '';
      delete document.body.dataset.live;
      setTimeout(connect, retry);
      retry = Math.min(retry * 2, 60000);
    };
  }
  connect();
})();
