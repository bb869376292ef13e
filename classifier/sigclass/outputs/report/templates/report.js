
(function(){
  document.documentElement.setAttribute('data-js','ready');
  document.querySelectorAll('svg.tl-chart').forEach(function(svg){
    function on(key){
      svg.classList.add('focus');
      svg.querySelectorAll('[data-cascade="'+CSS.escape(key)+'"]').forEach(function(e){e.classList.add('on');});
    }
    function off(){svg.classList.remove('focus');svg.querySelectorAll('.on').forEach(function(e){e.classList.remove('on');});}
    svg.addEventListener('mouseover',function(ev){
      var t=ev.target.closest('[data-cascade]'); if(t){on(t.getAttribute('data-cascade'));}
    });
    svg.addEventListener('mouseout',function(ev){ if(ev.target.closest('[data-cascade]')) off(); });
  });
})();
